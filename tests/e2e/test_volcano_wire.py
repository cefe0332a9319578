"""A team switches Volcano's job controller off and lavalog on: what Volcano's own tools
write is obeyed, and what they read is there.

- A Command made exactly as `vcctl job suspend` / `resume` make it (volcano-sh/volcano
  `pkg/cli/util/util.go` `CreateJobCommand`: the target under the JSON name `target`) is
  obeyed, recorded on the Job as Volcano's controller records it (`CommandIssued`, then
  `ExecuteAction`, source `vc-controller-manager`), and deleted.
- A Job created where Volcano's mutating webhook does not run (no task name, scheduler,
  queue or minAvailable) still runs as a gang on Volcano's scheduler.
"""

from __future__ import annotations

from typing import Any

import pytest

from lavalog.simulator import registry
from lavalog.simulator.selectors import Selector
from tests.e2e.conftest import NAMESPACE, Obj, System
from tests.e2e.jobs import job, task

pytestmark = pytest.mark.integration

COMMANDS = f"/apis/bus.volcano.sh/v1alpha1/namespaces/{NAMESPACE}/commands"


def vcctl_command(target: Obj, action: str) -> dict[str, Any]:
    """What `vcctl job suspend -N NAME` (AbortJob) or `resume` (ResumeJob) creates."""
    meta = target["metadata"]
    controller_ref = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "name": meta["name"],
        "uid": meta["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }
    return {
        "apiVersion": "bus.volcano.sh/v1alpha1",
        "kind": "Command",
        "metadata": {
            "generateName": f"{meta['name']}-{action.lower()}-",
            "namespace": meta["namespace"],
            "ownerReferences": [controller_ref],
        },
        "target": controller_ref,
        "action": action,
    }


def commands(system: System) -> list[Obj]:
    store = system.cluster.objects.store
    return [e.obj for e in store.scan(registry.COMMAND, NAMESPACE, Selector())]


def events_on(system: System, name: str) -> list[Obj]:
    store = system.cluster.objects.store
    return [
        e.obj
        for e in store.scan(registry.EVENT, NAMESPACE, Selector())
        if e.obj["involvedObject"]["name"] == name
    ]


async def test_a_command_made_as_vcctl_makes_it_is_obeyed_then_deleted(system: System) -> None:
    name = "vcctl-suspend"
    created = await system.submit(job(name, task("worker", 2)))
    await system.until_phase(name, ["Running"], 30)

    await system.kube.request("POST", COMMANDS, body=vcctl_command(created, "AbortJob"))
    aborted = await system.until_phase(name, ["Aborted"], 30)
    await system.log.until(lambda: not system.log.live_pods(name), 20, "the pods killed")
    await system.log.until(lambda: not commands(system), 20, "the Command deleted")

    issued = [e for e in events_on(system, name) if e["reason"] == "CommandIssued"]
    assert [e["message"] for e in issued] == [
        "Start to execute command AbortJob, and clean it up to make sure executed not more than once."
    ]
    executed = [e for e in events_on(system, name) if e["reason"] == "ExecuteAction"]
    assert any(e["message"].startswith("Start to execute action AbortJob ") for e in executed)
    assert {e["source"]["component"] for e in issued + executed} == {"vc-controller-manager"}

    await system.kube.request("POST", COMMANDS, body=vcctl_command(created, "ResumeJob"))
    resumed = await system.until_phase(name, ["Running"], 30)
    await system.log.until(lambda: not commands(system), 20, "the Command deleted")
    assert resumed["status"]["version"] > aborted["status"]["version"]
    assert len(system.log.live_pods(name)) == 2


async def test_a_job_the_webhook_never_defaulted_runs_as_a_gang_on_volcano(system: System) -> None:
    name = "bare"
    bare = job(name, task("", 2, "sleep 20"))
    for field in ("schedulerName", "queue"):
        del bare["spec"][field]
    del bare["spec"]["tasks"][0]["name"]
    created = await system.submit(bare)
    await system.until_phase(name, ["Running"], 30)
    group = system.cluster.objects.find(
        registry.PODGROUP, NAMESPACE, f"{name}-{created['metadata']['uid']}"
    )
    assert group is not None and group["spec"]["minMember"] == 2

    done = await system.until_phase(name, ["Completed", "Failed"], 30)

    assert done["status"]["state"]["phase"] == "Completed"
    pods = system.log.pods_of(name)
    assert sorted(p["metadata"]["name"] for p in pods) == ["bare-default0-0", "bare-default0-1"]
    assert {p["spec"]["schedulerName"] for p in pods} == {"volcano"}
