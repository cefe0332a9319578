"""Cluster and log faults through the whole system: a lost node (PodGroup Unknown),
dropped watches and expired watch history (410 Gone), a poison message on
`lavalog.observed`."""

from __future__ import annotations

import asyncio
import itertools
import time
from functools import partial

import msgspec
import pytest
from aiokafka.structs import RecordMetadata

from bench.harness import read_topic
from lavalog.controller.kafka import KafkaSettings, create_producer, topic_name
from lavalog.events import topics
from lavalog.events.codec import decode_observation
from lavalog.events.deadletter import DeadLetter
from lavalog.events.observations import PodDeleted, PodObserved
from lavalog.simulator.store import Change
from tests.e2e.conftest import (
    FINISHED,
    NAMESPACE,
    System,
    job_phase,
    running_system,
)
from tests.e2e.faults import running_pods
from tests.e2e.jobs import job, on, task

pytestmark = pytest.mark.integration

P, R, RS = "Pending", "Running", "Restarting"


def both_running(system: System, name: str) -> bool:
    return running_pods(system, name, ("test-0", "test-1"))


def nothing_live(system: System, name: str) -> bool:
    return not system.log.live_pods(name)


async def test_lost_node_makes_the_gang_unknown(e2e_kafka: KafkaSettings) -> None:
    """job_error_handling.go, "Restart/Abort job when job is unschedulable": part of a
    running gang is lost and cannot be placed again (PodGroup Unknown). RestartJob waits
    in Pending until the node is back, then runs; AbortJob aborts."""
    big = job(
        "unknown-restart",
        task("test", 2, cpu="6"),  # one per 8-CPU node: the gang needs both nodes
        policies=[on("Unknown", "RestartJob")],
    )
    # requests spread pods (the scheduler puts each on the node with the most room left)
    small = job("unknown-abort", task("test", 2, cpu="1"), policies=[on("Unknown", "AbortJob")])
    async with running_system(e2e_kafka, nodes=2) as system:
        log = system.log
        for manifest in (big, small):
            await system.submit(manifest)
        for name in ("unknown-restart", "unknown-abort"):
            await system.until_phase(name, [R], 30)
            await log.until(partial(both_running, system, name), 10)
        for name in ("unknown-restart", "unknown-abort"):  # each gang spans both nodes
            assert {p["spec"]["nodeName"] for p in log.pods_of(name)} == {"node-1", "node-2"}

        system.cluster.admin.lose_node("node-2")

        await system.until_phase("unknown-abort", ["Aborted"], 30)
        assert system.log.phase_path("unknown-abort") == [P, R, "Aborting", "Aborted"]
        await system.until_phase("unknown-restart", [P], 30)
        assert system.log.phase_path("unknown-restart") == [
            P,
            R,
            RS,
            P,
        ]  # waits: one node cannot hold it
        system.cluster.admin.restore_node("node-2")
        restarted = await system.until_phase("unknown-restart", [R], 30)
        assert system.log.phase_path("unknown-restart") == [P, R, RS, P, R]
        assert restarted["status"]["retryCount"] == 1
        assert sorted(log.live_pods("unknown-restart")) == [
            "unknown-restart-test-0",
            "unknown-restart-test-1",
        ]
        await log.until(lambda: not log.live_pods("unknown-abort"), 10)


#: jobs that restart, fail and complete, so that pods keep changing while watches break.
#: A pod that ends only when the controller kills it (never on its own: a ps that could
#: succeed just as its failed job deletes it would change twice in one gap, and a list
#: after 410 shows only its deletion, on a real API server too). So one worker where a
#: failure kills the others: two failing together, the first one's restart would delete
#: the second, Failed a moment before, within the same gap
WATCHED = {
    "w-restart": (job("w-restart", task("ps", 1), task("worker", 1, "sleep 20; exit 1"), maxRetry=3, policies=[on("PodFailed", "RestartJob")]), "Failed", 3),
    "w-task": (job("w-task", task("ps", 1), task("worker", 1, "sleep 20; exit 1", policies=[on("PodFailed", "RestartTask")]), maxRetry=2), "Failed", 2),
    "w-complete": (job("w-complete", task("worker", 4, "sleep 30")), "Completed", 0),
    "w-abort": (job("w-abort", task("ps", 1), task("worker", 1, "sleep 40; exit 2"), policies=[on("PodFailed", "AbortJob")]), "Aborted", 0),
}  # fmt: skip


class WatchBreaker:
    """Breaks every watch at the moment a pod changes, before any watch can send that
    change: every other time by a plain drop (watchers resume from their resourceVersion),
    else by expiring the history first (they get 410 Gone and must list again)."""

    def __init__(self, system: System) -> None:
        self.system = system
        self.drops = 0
        self.expiries = 0
        self._turn = itertools.cycle((False, True))
        system.cluster.store.subscribe(self._on_change)

    def _on_change(self, change: Change) -> None:
        if change.resource.plural != "pods":
            return
        admin = self.system.cluster.admin
        if next(self._turn):
            admin.expire_history()
            self.expiries += 1
        admin.drop_watches()
        self.drops += 1


async def test_dropped_watches_and_410_lose_no_pod_change(e2e_kafka: KafkaSettings) -> None:
    async with running_system(e2e_kafka, nodes=2) as system:
        breaker = WatchBreaker(system)
        for manifest, _, _ in WATCHED.values():
            await system.submit(manifest)

        for name, (_, phase, retries) in WATCHED.items():
            found = await system.until_phase(name, [phase], 60)
            assert found["status"]["retryCount"] == retries, name
        for name in WATCHED:
            await system.log.until(partial(nothing_live, system, name), 15)
        await system.log.until(partial(every_pod_ended, system), 15)
        deadline = time.monotonic() + 10
        while missed := await missed_changes(system):
            assert time.monotonic() < deadline, "\n".join(missed)
            await asyncio.sleep(0.2)

    assert breaker.expiries > 20


def every_pod_ended(system: System) -> bool:
    return all(p[-1] in ("Deleted", "Succeeded", "Failed") for p in system.log.phases.values())


async def missed_changes(system: System) -> list[str]:
    """Pods whose end (Succeeded, Failed, deletion) is not on `lavalog.observed`."""
    records = await read_topic(system.kafka, topics.OBSERVED, system.kafka.observed_partitions)
    seen: dict[str, list[str]] = {}
    for fact in (decode_observation(r.value) for r in records):
        if isinstance(fact, PodObserved):
            seen.setdefault(fact.pod_uid, []).append(fact.phase)
        elif isinstance(fact, PodDeleted):
            seen.setdefault(fact.pod_uid, []).append("Deleted")
    missed = []
    for uid, phases in system.log.phases.items():
        observed = seen.get(uid, [])
        finished = {p for p in phases if p in ("Succeeded", "Failed")}
        if not finished <= set(observed) or observed[-1:] != phases[-1:]:
            missed.append(f"{system.log.names[uid]}: {phases}, observed {observed}")
    return missed


async def test_poison_message_goes_to_dead_letters_and_the_job_goes_on(system: System) -> None:
    """Raw bytes on the job's partition (its key) between its first facts and the rest:
    the decider dead-letters them and decides everything after them."""
    name = "poisoned"
    key = f"{NAMESPACE}/{name}".encode()
    await system.submit(
        job(name, task("worker", 2, "sleep 50"), policies=[on("PodFailed", "RestartJob")])
    )
    await system.until_phase(name, [P], 30)

    async with create_producer(system.kafka) as producer:
        sent: RecordMetadata = await producer.send_and_wait(
            topic_name(system.kafka, topics.OBSERVED), b"\x00 not an observation {", key=key
        )

    found = await system.until_phase(name, FINISHED, 30)
    letters = await read_topic(system.kafka, topics.DEADLETTER, system.kafka.deadletter_partitions)

    assert (job_phase(found), system.log.phase_path(name)) == ("Completed", [P, R, "Completed"])
    assert len(letters) == 1
    letter = msgspec.json.decode(letters[0].value, type=DeadLetter)
    assert letters[0].key == key
    assert (letter.partition, letter.offset, letter.consumer) == (
        sent.partition,
        sent.offset,
        "decider",
    )
    assert letter.key == key.decode() and "not an observation" in letter.value and letter.error
