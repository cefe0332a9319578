"""Two controller replicas on one Kafka and one cluster: the deciders and actuators share
the partitions, only the Lease holder watches, and when it stops the other takes over."""

from __future__ import annotations

import asyncio
import itertools

import pytest
from aiokafka.partitioner import DefaultPartitioner

from lavalog.controller.kafka import KafkaSettings
from lavalog.simulator.registry import LEASE
from tests.e2e.conftest import (
    NAMESPACE,
    PARTITIONS,
    System,
    poll_until,
    running_system,
    wait_for_phase,
)
from tests.e2e.jobs import job, task

pytestmark = pytest.mark.integration


def spread(prefix: str, per_partition: int) -> list[str]:
    """Job names whose keys land `per_partition` times on every partition of
    `lavalog.observed` (Kafka's default partitioner: murmur2 of the key)."""
    partitioner = DefaultPartitioner()
    everywhere = list(range(PARTITIONS))
    names: dict[int, list[str]] = {p: [] for p in everywhere}
    for i in itertools.count():
        name = f"{prefix}-{i}"
        partition = partitioner(f"{NAMESPACE}/{name}".encode(), everywhere, everywhere)
        if len(names[partition]) < per_partition:
            names[partition].append(name)
        if all(len(n) == per_partition for n in names.values()):
            return [name for p in everywhere for name in names[p]]
    raise AssertionError("unreachable")


async def run_jobs(system: System, names: list[str]) -> None:
    for name in names:
        await system.submit(job(name, task("worker", 2, "sleep 20")))
    for name in names:
        await wait_for_phase(system.kube, name, ["Completed", "Failed"], 30)
        assert system.log.phase_path(name) == ["Pending", "Running", "Completed"], name


async def test_replicas_share_partitions_and_one_watches(e2e_kafka: KafkaSettings) -> None:
    async with running_system(e2e_kafka, replicas=("replica-a", "replica-b")) as system:
        a, b = system.replicas
        deciders = (a.component("decider"), b.component("decider"))

        def shared() -> bool:
            owned = [d.assigned for d in deciders]
            return all(owned) and sorted(owned[0] + owned[1]) == list(range(PARTITIONS))

        await poll_until(shared, 15, "both deciders own partitions")
        assert [a.is_leader, b.is_leader].count(True) == 1
        leaders: set[tuple[str, ...]] = set()
        sampler = asyncio.create_task(sample_leaders(system, leaders))

        await run_jobs(system, spread("before", 2))

        assert all(d.counters["decisions"] > 0 for d in deciders)
        actuators = [r.component("actuator").counters.applied for r in (a, b)]
        assert all(n > 0 for n in actuators), actuators

        leader, follower = (a, b) if a.is_leader else (b, a)
        # the leader's decider takes what its own watchers deliver without a fetch; every
        # observation the follower's decides comes from the other process, by a fetch
        assert leader.component("decider").counters["delivered_here"] > 0
        assert follower.component("decider").counters["delivered_here"] == 0
        # the decider's and the actuator's groups assign alike (members are ordered by
        # their ids, which begin with the replica's identity), so on either replica its
        # decider's decisions go to its own actuator without a fetch
        for replica in (a, b):
            actuator = replica.component("actuator")
            owned = sorted(p.partition for p in actuator.consumer.assignment())
            assert owned == replica.component("decider").assigned
            assert actuator.counters.delivered_here > 0
        await leader.halt()
        await poll_until(lambda: follower.is_leader, 10, "the follower leads")
        await poll_until(
            lambda: follower.component("decider").assigned == list(range(PARTITIONS)),
            15,
            "the follower owns every partition",
        )

        await run_jobs(system, spread("after", 1))
        sampler.cancel()

    # sampled every 20 ms: never two leaders, and the Lease named the one that led
    allowed = {(leader.identity,), (follower.identity,), ()}
    assert {(leader.identity,), (follower.identity,)} <= leaders <= allowed, leaders


async def sample_leaders(system: System, seen: set[tuple[str, ...]]) -> None:
    """Record which replicas lead (as far as the Lease agrees), until cancelled."""
    while True:
        leading = tuple(r.identity for r in system.replicas if not r.task.done() and r.is_leader)
        lease = system.cluster.objects.find(LEASE, NAMESPACE, "lavalog-watchers")
        holder = (lease or {}).get("spec", {}).get("holderIdentity") or ""
        seen.add(leading if all(me == holder for me in leading) else ("Lease:", holder, *leading))
        await asyncio.sleep(0.02)
