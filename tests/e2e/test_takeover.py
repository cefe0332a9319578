"""Taking over from Volcano (docs/migration.md): lavalog starts on a cluster full of jobs
that Volcano's job controller ran, and goes on from where each one is.

Before lavalog starts, each Job is set up as Volcano leaves it: its PodGroup
(`<job>-<uid>`) and its pods of the job's version (labelled, owned, named as Volcano
names them), run by the simulated scheduler and kubelet, and the status Volcano wrote:
three runs behind it (retryCount 2, version 2), Running, Completed or half-way through a
restart. lavalog then recreates nothing that exists and resets no counter.
"""

from __future__ import annotations

import time
from typing import Any

import msgspec
import pytest

from lavalog.controller.actuator.core import paths
from lavalog.controller.actuator.core.podgroup import build_podgroup
from lavalog.controller.actuator.core.pods import build_pods
from lavalog.controller.kafka import KafkaSettings
from lavalog.events.decisions import PodGroupCreate, PodRef, PodsCreate
from lavalog.events.timestamps import to_rfc3339
from lavalog.events.volcano.api import PODGROUP_API_VERSION
from tests.e2e.conftest import NAMESPACE, Obj, System, job_phase, pod_phase, running_system
from tests.e2e.jobs import job, task

pytestmark = [pytest.mark.integration, pytest.mark.timeout(150)]

WAIT = 40.0
#: the phases Volcano's job went through before: Pending, Running, a restart, ... Running
#: the phases of a job that ran three times, as Volcano's conditions keep them: one entry
#: per phase, the latest last (`appendJobCondition`)
HISTORY = ["Restarting", "Pending", "Running"]


async def volcano_ran(
    system: System, manifest: Obj, *, pods_version: int, pods_phase: dict[str, str]
) -> tuple[Obj, str]:
    """Create the Job, its PodGroup and its pods of `pods_version` as Volcano's job
    controller does, and wait until each pod is in its phase; the Job and PodGroup uid."""
    created = await system.submit(manifest)
    name, uid = created["metadata"]["name"], created["metadata"]["uid"]
    envelope: dict[str, Any] = {
        "id": "volcano",
        "key": f"{NAMESPACE}/{name}",
        "job_uid": uid,
        "time": time.time(),
        "cause": "volcano",
    }
    spec = created["spec"]
    group = f"{name}-{uid}"
    decision = PodGroupCreate(
        **envelope, podgroup=group, min_member=spec.get("minAvailable", 0), queue="default"
    )
    podgroup = await post(
        system, PODGROUP_API_VERSION, "PodGroup", build_podgroup(created, decision)
    )
    refs = tuple(
        PodRef(name=f"{name}-{t['name']}-{i}", task=t["name"], index=i)
        for t in spec["tasks"]
        for i in range(t["replicas"])
    )
    pods = PodsCreate(**envelope, job_version=pods_version, podgroup=group, pods=refs)
    for pod in build_pods(created, pods):
        await post(system, "v1", "Pod", pod)
    await system.log.until(
        lambda: all(
            pod_phase(system.log.pod(pod) or {}) == phase for pod, phase in pods_phase.items()
        ),
        WAIT,
        f"{name}: pods {pods_phase}",
    )
    return created, podgroup["metadata"]["uid"]


async def post(system: System, api_version: str, kind: str, manifest: Obj) -> Obj:
    path = paths.collection(api_version, kind, NAMESPACE)
    found: Obj = msgspec.json.decode(await system.kube.request("POST", path, body=manifest))
    return found


async def write_status(system: System, name: str, phase: str, *, version: int) -> list[Obj]:
    """The status Volcano's job controller leaves: retryCount 2, `version`, one condition
    per phase it went through. Returns the conditions."""
    now = time.time()
    phases = [*(p for p in HISTORY if p != phase), phase]
    conditions = [
        {"status": p, "lastTransitionTime": to_rfc3339(now - 60 * (len(phases) - i))}
        for i, p in enumerate(phases)
    ]
    current = await system.job(name)
    status = {
        "state": {"phase": phase, "lastTransitionTime": conditions[-1]["lastTransitionTime"]},
        "minAvailable": current["spec"].get("minAvailable", 0),
        "version": version,
        "retryCount": 2,
        "conditions": conditions,
    }
    path = paths.job(NAMESPACE, name) + "/status"
    await system.kube.request("PUT", path, body={**current, "status": status})
    return conditions


async def podgroup_uid(system: System, name: str, uid: str) -> str:
    path = paths.named(PODGROUP_API_VERSION, "PodGroup", NAMESPACE, f"{name}-{uid}")
    found: Obj = msgspec.json.decode(await system.kube.request("GET", path))
    return str(found["metadata"]["uid"])


def gone_or_going(pod: Obj | None) -> bool:
    return pod is None or bool(pod["metadata"].get("deletionTimestamp"))


def status(job: Obj) -> tuple[str, int, int]:
    found = job.get("status") or {}
    return job_phase(job), found.get("version", 0), found.get("retryCount", 0)


async def test_lavalog_goes_on_with_the_jobs_volcano_ran(e2e_kafka: KafkaSettings) -> None:
    async with running_system(e2e_kafka, replicas=()) as system:
        # Running, version 2, with both pods and its PodGroup
        running, running_group = await volcano_ran(
            system,
            job("vc-running", task("w", 2)),
            pods_version=2,
            pods_phase={"vc-running-w-0": "Running", "vc-running-w-1": "Running"},
        )
        running_history = await write_status(system, "vc-running", "Running", version=2)
        # Completed on minSuccess while one pod still ran (Volcano kills it on its next sync)
        await volcano_ran(
            system,
            job("vc-completed", task("done", 1, "true"), task("rest", 1), minSuccess=1),
            pods_version=2,
            pods_phase={"vc-completed-done-0": "Succeeded", "vc-completed-rest-0": "Running"},
        )
        await write_status(system, "vc-completed", "Completed", version=2)
        # Restarting to version 3: switched off before the pods of version 2 were deleted
        restarting, restarting_group = await volcano_ran(
            system,
            job("vc-restarting", task("w", 2)),
            pods_version=2,
            pods_phase={"vc-restarting-w-0": "Running", "vc-restarting-w-1": "Running"},
        )
        await write_status(system, "vc-restarting", "Restarting", version=3)

        await system.start_replica("e2e-1")
        await system.ready()

        # a running job: an eviction gets the pod back, of the job's version; nothing else
        system.cluster.admin.evict(NAMESPACE, "vc-running-w-0")
        await system.log.until(
            lambda: (
                system.log.creations("vc-running")["vc-running-w-0"] == 2
                and pod_phase(system.log.pod("vc-running-w-0") or {}) == "Running"
            ),
            WAIT,
            "vc-running-w-0 created again and running",
        )
        assert system.log.creations("vc-running") == {"vc-running-w-0": 2, "vc-running-w-1": 1}
        assert {v for (n, v) in system.log.created_versions() if n.startswith("vc-running")} == {2}
        assert await podgroup_uid(system, "vc-running", running["metadata"]["uid"]) == running_group
        # Pending while the pod made again waits, Running once it runs (state/running.go)
        job_now = await system.until_phase("vc-running", ["Running"], WAIT)
        assert status(job_now) == ("Running", 2, 2)
        conditions = job_now["status"]["conditions"]
        # Volcano's entries kept; Pending's and Running's moved to when lavalog wrote them
        moved = ("Pending", "Running")
        assert conditions[:-2] == [c for c in running_history if c["status"] not in moved]
        assert [c["status"] for c in conditions[-2:]] == list(moved)

        # a completed job stays completed: its last running pod is killed, nothing started
        await system.log.until(
            lambda: gone_or_going(system.log.pod("vc-completed-rest-0")),
            WAIT,
            "the completed job's leftover pod is killed",
        )
        assert system.log.creations("vc-completed") == {
            "vc-completed-done-0": 1,
            "vc-completed-rest-0": 1,
        }
        assert status(await system.job("vc-completed")) == ("Completed", 2, 2)

        # a restart half-way: the old pods go, version 3 starts; the retry count stays 2
        await system.until_phase("vc-restarting", ["Running"], WAIT)
        await system.log.until(
            lambda: (
                len(system.log.live_pods("vc-restarting")) == 2
                and all(
                    (p["metadata"].get("annotations") or {}).get("volcano.sh/job-version") == "3"
                    for p in system.log.pods_of("vc-restarting")
                    if pod_phase(p) == "Running"
                )
            ),
            WAIT,
            "vc-restarting runs its pods of version 3",
        )
        assert system.log.creations("vc-restarting") == {
            "vc-restarting-w-0": 2,
            "vc-restarting-w-1": 2,
        }
        restarted = {(n, v) for (n, v) in system.log.created_versions() if "restarting" in n}
        assert {v for _, v in restarted} == {2, 3}
        group_now = await podgroup_uid(system, "vc-restarting", restarting["metadata"]["uid"])
        assert group_now == restarting_group
        assert status(await system.job("vc-restarting")) == ("Running", 3, 2)
