"""What happened while no controller watched is not lost when one starts again.

- A Job deleted while no replica ran: the next leader publishes `JobDeleted` (the id a
  watcher would have given it), the decider forgets the job and cancels its timers, and
  the projections show it deleted.
- A PodGroup deleted while no replica ran: seen as deleted, and made again, as Volcano's
  job controller makes a missing PodGroup on its next sync (`createOrUpdatePodGroup`).
- A Command created while no replica ran, with two replicas starting: obeyed once.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from bench.harness import read_topic
from lavalog.controller.actuator.core import paths
from lavalog.events.codec import decode_decision, decode_observation
from lavalog.events.decisions import ActionDecided, TimerCancelled, TimerScheduled
from lavalog.events.observations import JobDeleted, PodGroupObserved
from lavalog.events.topics import DECISIONS, OBSERVED
from lavalog.events.volcano.api import PODGROUP_API_VERSION
from lavalog.projections.core.fold import new_history, record
from lavalog.simulator import registry
from lavalog.simulator.selectors import Selector
from tests.e2e.conftest import NAMESPACE, PARTITIONS, Obj, System
from tests.e2e.jobs import job, task
from tests.e2e.test_volcano_wire import COMMANDS, commands, events_on, vcctl_command

pytestmark = pytest.mark.integration


async def observed(system: System) -> list[Any]:
    return [
        decode_observation(r.value) for r in await read_topic(system.kafka, OBSERVED, PARTITIONS)
    ]


async def decided(system: System) -> list[Any]:
    return [decode_decision(r.value) for r in await read_topic(system.kafka, DECISIONS, PARTITIONS)]


def podgroups(system: System) -> list[Obj]:
    store = system.cluster.objects.store
    return [e.obj for e in store.scan(registry.PODGROUP, NAMESPACE, Selector())]


async def halt_all(system: System) -> None:
    for replica in system.replicas:
        if not replica.task.done():
            await replica.halt()


async def restart(system: System, *identities: str) -> None:
    for identity in identities:
        await system.start_replica(identity)
    await system.ready()


async def until_read(read: Callable[[], Awaitable[bool]], within: float, what: str) -> None:
    """Read the topics again until `read` finds what it looks for."""
    deadline = time.monotonic() + within
    while not await read():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {within} s: {what}")
        await asyncio.sleep(0.2)


async def test_a_job_deleted_while_no_controller_ran_is_forgotten(system: System) -> None:
    name = "deleted-unwatched"
    manifest = job(name, task("worker", 1, "true"), ttlSecondsAfterFinished=3600)
    uid = (await system.submit(manifest))["metadata"]["uid"]
    await system.until_phase(name, ["Completed"], 30)

    async def ttl_timer() -> bool:
        return any(
            isinstance(d, TimerScheduled) and d.job_uid == uid for d in await decided(system)
        )

    await until_read(ttl_timer, 30, "the ttlSecondsAfterFinished timer scheduled")
    await halt_all(system)
    await system.kube.request("DELETE", paths.job(NAMESPACE, name))
    await system.log.until(lambda: system.log.job(name) is None, 10, "the Job gone")
    await system.log.until(lambda: not podgroups(system), 10, "its PodGroup collected")

    await restart(system, "e2e-2")

    async def timer_cancelled() -> bool:
        return any(
            isinstance(d, TimerCancelled) and d.job_uid == uid for d in await decided(system)
        )

    await until_read(timer_cancelled, 30, "the decider forgot the job and its timer")
    facts = [o for o in await observed(system) if o.job_uid == uid]
    [deleted] = [o for o in facts if isinstance(o, JobDeleted)]
    assert deleted.id == f"job/{uid}/deleted"
    history = new_history(facts[0])
    for fact in facts:
        record(history, fact)
    assert history.deleted == deleted.time  # the timeline shows it deleted


async def test_a_podgroup_deleted_while_no_controller_ran_is_made_again(system: System) -> None:
    name = "podgroup-unwatched"
    await system.submit(job(name, task("worker", 2)))
    await system.until_phase(name, ["Running"], 30)
    [before] = podgroups(system)
    await halt_all(system)
    path = paths.named(PODGROUP_API_VERSION, "PodGroup", NAMESPACE, before["metadata"]["name"])
    await system.kube.request("DELETE", path)
    await system.log.until(lambda: not podgroups(system), 10, "the PodGroup gone")

    await restart(system, "e2e-2")
    await system.log.until(lambda: bool(podgroups(system)), 30, "the PodGroup made again")
    [after] = podgroups(system)
    assert after["metadata"]["name"] == before["metadata"]["name"]
    assert after["metadata"]["uid"] != before["metadata"]["uid"]
    assert after["spec"]["minMember"] == before["spec"]["minMember"]
    gone = [
        o
        for o in await observed(system)
        if isinstance(o, PodGroupObserved) and o.podgroup_uid == before["metadata"]["uid"]
    ]
    assert [o.id for o in gone if o.deleted] == [f"podgroup/{before['metadata']['uid']}/deleted"]
    assert (await system.job(name))["status"]["state"]["phase"] == "Running"
    assert len(system.log.live_pods(name)) == 2  # the pods were not touched


@pytest.mark.parametrize("replicas", [("e2e-2",), ("e2e-2", "e2e-3")])
async def test_a_command_created_while_no_controller_ran_is_obeyed_once(
    system: System, replicas: tuple[str, ...]
) -> None:
    name = "command-unwatched"
    created = await system.submit(job(name, task("worker", 2)))
    running = await system.until_phase(name, ["Running"], 30)
    await halt_all(system)
    await system.kube.request("POST", COMMANDS, body=vcctl_command(created, "AbortJob"))

    await restart(system, *replicas)
    aborted = await system.until_phase(name, ["Aborted"], 30)
    await system.log.until(lambda: not commands(system), 20, "the Command deleted")
    await system.log.until(lambda: not system.log.live_pods(name), 20, "the pods killed")
    # Each replica leads in turn: the one that leads now lists again, finds nothing new.
    for replica in [r for r in system.replicas if r.is_leader]:
        await replica.halt()
    if len(replicas) > 1:
        await system.ready()

    issued = [e for e in events_on(system, name) if e["reason"] == "CommandIssued"]
    assert len(issued) == 1
    aborts = [
        d
        for d in await decided(system)
        if isinstance(d, ActionDecided) and d.job_uid == created["metadata"]["uid"]
    ]
    assert [d.action for d in aborts] == ["AbortJob"]
    assert aborted["status"]["version"] == running["status"]["version"] + 1
