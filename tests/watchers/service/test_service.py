"""The watchers end to end: the simulated cluster in, the development broker out."""

from __future__ import annotations

import asyncio

import msgspec
import pytest

from lavalog.controller.kafka import KafkaSettings
from lavalog.controller.kube import MERGE_PATCH, Kube
from lavalog.controller.watchers.service.runner import WatcherService
from lavalog.controller.watchers.service.watch import WatchSettings
from lavalog.events.observations import (
    AnyObservation,
    CommandIssued,
    JobObserved,
    PodDeleted,
    PodGroupObserved,
    PodObserved,
    PodsListed,
)
from tests.watchers.conftest import (
    JOBS,
    ONE_NODE,
    PODS,
    ObservedLog,
    create_job,
    create_pod,
    running,
    service,
    until,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60), ONE_NODE]

COMMANDS = "/apis/bus.volcano.sh/v1alpha1/namespaces/default/commands"


async def test_a_job_its_pod_podgroup_and_command_are_observed_in_order(
    kube: Kube, kafka_settings: KafkaSettings, observed: ObservedLog
) -> None:
    watchers = service(kube, kafka_settings)
    async with running(watchers):
        await until(lambda: watchers.ready and watchers.is_leader)
        job = await create_job(kube, "mpi")
        uid = job["metadata"]["uid"]
        await kube.request(
            "POST",
            "/apis/scheduling.volcano.sh/v1beta1/namespaces/default/podgroups",
            body={
                "metadata": {
                    "name": f"mpi-{uid}",
                    "ownerReferences": [
                        {
                            "apiVersion": "batch.volcano.sh/v1alpha1",
                            "kind": "Job",
                            "name": "mpi",
                            "uid": uid,
                            "controller": True,
                        }
                    ],
                },
                "spec": {"minMember": 1},
                "status": {"phase": "Pending"},
            },
        )
        await create_pod(kube, job, 0, "sleep 25; exit 3")
        await observed.wait_for(
            lambda seen: any(isinstance(o, PodObserved) and o.phase == "Failed" for o in seen)
        )

        # the controller's own status writes are not news; a new spec is
        await kube.request(
            "PATCH",
            f"{JOBS}/mpi/status",
            body={"status": {"state": {"phase": "Running"}}},
            content_type=MERGE_PATCH,
        )
        spec = job["spec"] | {"maxRetry": 5}
        await kube.request("PATCH", f"{JOBS}/mpi", body={"spec": spec}, content_type=MERGE_PATCH)
        await kube.request(
            "POST",
            "/apis/bus.volcano.sh/v1alpha1/namespaces/default/commands",
            body={
                "metadata": {"name": "mpi-abort"},
                "action": "AbortJob",
                "target": {
                    "apiVersion": "batch.volcano.sh/v1alpha1",
                    "kind": "Job",
                    "name": "mpi",
                    "uid": uid,
                },
            },
        )
        await kube.request("DELETE", f"{PODS}/mpi-worker-0")
        seen = await observed.wait_for(
            lambda seen: (
                any(isinstance(o, PodDeleted) for o in seen)
                and any(isinstance(o, CommandIssued) for o in seen)
            )
        )
        seen = await observed.settle()

    assert all(o.key == "default/mpi" and o.job_uid == uid for o in seen)
    assert len({o.id for o in seen}) == len(seen)
    jobs = [o for o in seen if isinstance(o, JobObserved)]
    assert [j.generation for j in jobs] == [1, 2]
    assert jobs[1].spec["maxRetry"] == 5
    pods = [o for o in seen if isinstance(o, PodObserved | PodDeleted)]
    facts = [
        (type(p).__name__, p.phase, p.node if isinstance(p, PodObserved) else "") for p in pods
    ]
    assert facts == [
        ("PodObserved", "Pending", ""),
        ("PodObserved", "Pending", "node-1"),
        ("PodObserved", "Running", "node-1"),
        ("PodObserved", "Failed", "node-1"),
        ("PodDeleted", "Failed", ""),
    ]
    failed = pods[3]
    assert isinstance(failed, PodObserved)
    assert (
        failed.pod,
        failed.task,
        failed.index,
        failed.job_version,
        failed.exit_code,
        failed.reason,
    ) == ("mpi-worker-0", "worker", 0, 0, 3, "Error")
    assert (
        failed.created is not None
        and failed.scheduled is not None
        and failed.started is not None
        and failed.finished is not None
    )
    groups = [o for o in seen if isinstance(o, PodGroupObserved)]
    assert groups and groups[0].podgroup == f"mpi-{uid}"
    (command,) = [o for o in seen if isinstance(o, CommandIssued)]
    assert (command.command, command.action) == ("mpi-abort", "AbortJob")


async def test_a_job_command_is_deleted_once_in_the_log_and_others_are_left_alone(
    kube: Kube, kafka_settings: KafkaSettings, observed: ObservedLog
) -> None:
    """Volcano's controller deletes every Command it takes (RBAC: commands delete)."""
    job = await create_job(kube, "mpi")
    target = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "name": "mpi",
        "uid": job["metadata"]["uid"],
        "controller": True,
    }
    for name, aimed in (("mpi-abortjob-x1", target), ("queue-close", target | {"kind": "Queue"})):
        await kube.request(
            "POST",
            COMMANDS,
            body={"metadata": {"name": name}, "action": "AbortJob", "target": aimed},
        )
    watchers = service(kube, kafka_settings)
    async with running(watchers):
        await observed.wait_for(lambda seen: any(isinstance(o, CommandIssued) for o in seen))
        left = await _commands_once_gone(kube, "mpi-abortjob-x1")
    assert left == ["queue-close"]


async def _commands_once_gone(kube: Kube, name: str, within: float = 10.0) -> list[str]:
    """The Commands left once `name` is gone."""
    async with asyncio.timeout(within):
        while True:
            listed = msgspec.json.decode(await kube.request("GET", COMMANDS))
            names = sorted(c["metadata"]["name"] for c in listed["items"])
            if name not in names:
                return names
            await asyncio.sleep(0.05)


async def test_objects_that_exist_before_the_watchers_start_are_listed_page_by_page(
    kube: Kube, kafka_settings: KafkaSettings, observed: ObservedLog
) -> None:
    job = await create_job(kube, "early")
    for index in range(5):
        await create_pod(kube, job, index, "sleep 1000")
    watchers = WatcherService(
        kube=kube,
        kafka=kafka_settings,
        identity="lavalog-0",
        watch_settings=WatchSettings(page_size=2),
    )
    async with running(watchers):
        seen = await observed.wait_for(
            lambda seen: (
                len({o.pod for o in seen if isinstance(o, PodObserved)}) == 5
                and any(isinstance(o, JobObserved) for o in seen)
            )
        )
    assert {o.pod for o in seen if isinstance(o, PodObserved)} == {
        f"early-worker-{i}" for i in range(5)
    }


async def test_a_pod_deleted_while_no_watcher_ran_is_missing_from_the_next_listing(
    kube: Kube, kafka_settings: KafkaSettings, observed: ObservedLog
) -> None:
    job = await create_job(kube, "gap")
    for index in (0, 1):
        await create_pod(kube, job, index, "sleep 3600")
    first = service(kube, kafka_settings)
    async with running(first):
        await until(lambda: first.ready and first.is_leader)

    await kube.request(
        "DELETE", "/api/v1/namespaces/default/pods/gap-worker-1", query={"gracePeriodSeconds": 0}
    )
    second = service(kube, kafka_settings, identity="second")
    async with running(second):
        await until(lambda: second.ready and second.is_leader)

        def listings(seen: list[AnyObservation]) -> list[PodsListed]:
            return [o for o in seen if isinstance(o, PodsListed) and o.key == "default/gap"]

        await observed.wait_for(lambda seen: len(listings(seen)) >= 2)
    before, after = listings(observed.seen)[:2]
    assert sorted(before.pods) == ["gap-worker-0", "gap-worker-1"]
    assert sorted(after.pods) == ["gap-worker-0"]
    assert after.job_uid == job["metadata"]["uid"]
