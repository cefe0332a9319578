"""SIGKILL `lavalog run` and start it again under the same identity (a container restarted
in its pod): it takes its Lease back and carries out the next decision while its
predecessor's Lease would still be valid and before its predecessor's group members'
sessions would have run out, i.e. without waiting for either.

The kill lands right after a Lease renewal (from the store's synchronous listener), so
the old claim has its whole duration left. Both are judged on what waiting would look
like, not on how long the restarted process takes to start (up to 14 s seen on a busy
machine, most of it before it does anything): a candidate that waited for the claim
would take it a whole duration after its first look at the Lease; the killed process's
group members, left to time out, would go a session after their last heartbeat, while
a restarted process removes them as it starts. The sessions (20 s) outlast a slow start.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaClient
from aiokafka.client import CoordinationType

from bench.harness import LavalogRun
from lavalog.controller.actuator.service.runner import GROUP_ID as ACTUATOR_GROUP
from lavalog.controller.decider.service.runner import GROUP_ID as DECIDER_GROUP
from lavalog.controller.kafka import KafkaSettings, ensure_topics
from lavalog.controller.kafka.groups import describe_group
from lavalog.controller.kafka.security import connection_options
from lavalog.controller.kafka.topics import group_name
from lavalog.simulator import registry
from lavalog.simulator.access import Access
from lavalog.simulator.store import Change
from tests.e2e.conftest import make_kafka, running_system
from tests.e2e.jobs import job, task
from tests.e2e.test_crash import IDENTITY

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

#: tansu lets a group form after half the session timeout (docs/kafka.md)
SESSION_MS, HEARTBEAT_MS = 20_000, 500
SESSION = (SESSION_MS - HEARTBEAT_MS) / 1000  # a member's life after its last heartbeat
GROUPS = (DECIDER_GROUP, ACTUATOR_GROUP)


@dataclasses.dataclass
class Timeline:
    """What the API server stored around the kill, as it happened."""

    killed: float | None = None
    #: the Lease as the killed process last wrote it
    old_lease: dict[str, Any] | None = None
    #: the restarted process's first read of the Lease, and its first write
    lease_seen: float | None = None
    new_lease: dict[str, Any] | None = None
    lease_taken: float | None = None
    #: when the job's PodGroup (its first decision) was created
    carried_out: float | None = None
    #: per group, when the killed process's members were gone from it
    members_gone: dict[str, float] = dataclasses.field(default_factory=dict)


async def follow_members(kafka: KafkaSettings, timeline: Timeline, known: asyncio.Event) -> None:
    """Fill `timeline.members_gone`: each group's first members are the process to be
    killed's (`known` is set once every group has them: the kill waits for it, else a
    restart that removed them first would leave nothing to follow); note when none of
    them is left."""
    client = AIOKafkaClient(**connection_options(kafka), client_id="recovery-test")
    await client.bootstrap()
    try:
        names = {group_name(kafka, base): base for base in GROUPS}
        coordinators = {
            name: await client.coordinator_lookup(CoordinationType.GROUP, name) for name in names
        }

        async def members(name: str) -> frozenset[str]:
            return (await describe_group(client, coordinators[name], name))[1]

        before = {name: await members(name) for name in names}
        while not all(before.values()):  # its first join takes half a session
            await asyncio.sleep(0.1)
            before = {name: await members(name) for name in names}
        known.set()
        while len(timeline.members_gone) < len(names):
            for name in names.keys() - timeline.members_gone.keys():
                if not before[name] & await members(name):
                    timeline.members_gone[names[name]] = time.time()
            await asyncio.sleep(0.1)
    finally:
        await client.close()


def is_podgroup_of(change: Change, job_name: str) -> bool:
    """Whether `change` creates the PodGroup of `job_name`: its first decision carried out."""
    if change.resource is not registry.PODGROUP or change.type != "ADDED":
        return False
    owners = change.entry.obj["metadata"].get("ownerReferences") or ()
    return any(owner["name"] == job_name for owner in owners)


async def kill_after_a_renewal(
    controller: LavalogRun,
    armed: asyncio.Event,
    killed: asyncio.Event,
    *,
    ready_within: float = 30,
    after: asyncio.Event | None = None,
) -> None:
    """Start `controller` and, once it is ready (and `after` is set), arm the store
    listener that kills it right after its next Lease renewal (the claim then has its
    whole duration left)."""
    await controller.start()
    await controller.ready(ready_within)
    async with asyncio.timeout(30):
        if after is not None:
            await after.wait()
        armed.set()
        await killed.wait()


async def test_a_restarted_controller_takes_its_lease_and_groups_back_without_waiting(
    kafka_broker: str, tmp_path: Path
) -> None:
    kafka = dataclasses.replace(
        make_kafka(kafka_broker), session_timeout_ms=SESSION_MS, heartbeat_interval_ms=HEARTBEAT_MS
    )
    await ensure_topics(kafka)
    manifest = job("after-restart", task("worker", 1, "sleep 5"))
    async with running_system(kafka, replicas=()) as system:
        controller = LavalogRun(
            kafka, system.cluster.kubeconfig_path, tmp_path / "controller.log", IDENTITY
        )
        timeline = Timeline()
        armed, killed, carried_out = asyncio.Event(), asyncio.Event(), asyncio.Event()

        def watch(change: Change) -> None:
            obj = change.entry.obj
            if change.resource is registry.LEASE and change.type == "MODIFIED":
                if timeline.killed is None and armed.is_set():
                    controller.kill()  # right after it renewed: the claim has all its time left
                    timeline.killed, timeline.old_lease = time.time(), obj
                    killed.set()
                elif timeline.killed is not None and timeline.new_lease is None:
                    timeline.new_lease, timeline.lease_taken = obj, time.time()
            elif is_podgroup_of(change, "after-restart"):
                timeline.carried_out = time.time()
                carried_out.set()

        def look(access: Access) -> None:
            after_kill = timeline.killed is not None and timeline.lease_seen is None
            if after_kill and access.resource == "leases" and access.verb == "get":
                timeline.lease_seen = time.time()

        system.cluster.store.subscribe(watch)
        system.cluster.on_request(look)
        members_known = asyncio.Event()
        following = asyncio.create_task(follow_members(kafka, timeline, members_known))
        try:
            await kill_after_a_renewal(
                controller, armed, killed, ready_within=60, after=members_known
            )
            await controller.restart()
            await system.submit(manifest)
            async with asyncio.timeout(60):
                await carried_out.wait()
                await following
        finally:
            following.cancel()
            await controller.stop()

    assert timeline.killed is not None and timeline.carried_out is not None
    old, new = timeline.old_lease, timeline.new_lease
    assert old is not None and new is not None, controller.tail()
    assert timeline.lease_seen is not None and timeline.lease_taken is not None
    # the Lease: taken back by the same holder, as one (no transition), at its first look
    # rather than once the claim it saw had gone unrenewed for its duration
    assert old["spec"]["holderIdentity"] == new["spec"]["holderIdentity"] == IDENTITY
    assert new["spec"]["leaseTransitions"] == old["spec"]["leaseTransitions"]
    assert timeline.lease_taken - timeline.lease_seen < old["spec"]["leaseDurationSeconds"]
    # the groups: the killed process's members removed before their sessions ran out,
    # and the next decision carried out within a join's time after, not a session's
    said = (dataclasses.asdict(timeline), controller.tail())
    assert all(gone < timeline.killed + SESSION for gone in timeline.members_gone.values()), said
    assert timeline.carried_out < max(timeline.members_gone.values()) + SESSION, said


async def test_a_replacement_under_a_new_identity_takes_over_after_a_short_lease(
    kafka_broker: str, tmp_path: Path
) -> None:
    """A controller pod replaced by a new one (a new pod name) with `--lease-duration 2`:
    the replacement takes the Lease the killed one left, once that claim has run out, and
    carries out the next decision. (How long that takes is `bench/recovery.py`'s.)"""
    kafka = make_kafka(kafka_broker)
    await ensure_topics(kafka)
    manifest = job("after-replacement", task("worker", 1, "sleep 5"))
    lease = ("--lease-duration", "2")
    async with running_system(kafka, replicas=()) as system:
        old = LavalogRun(kafka, system.cluster.kubeconfig_path, tmp_path / "old.log", "old", lease)
        new = LavalogRun(kafka, system.cluster.kubeconfig_path, tmp_path / "new.log", "new", lease)
        leases: list[dict[str, Any]] = []
        armed, killed, taken_over, carried_out = (asyncio.Event() for _ in range(4))

        def watch(change: Change) -> None:
            obj = change.entry.obj
            if change.resource is registry.LEASE:
                leases.append(obj)
                if armed.is_set() and not killed.is_set():
                    old.kill()  # right after it renewed: the claim has all its time left
                    killed.set()
                elif obj["spec"]["holderIdentity"] == "new":
                    taken_over.set()
            elif is_podgroup_of(change, "after-replacement"):
                carried_out.set()

        system.cluster.store.subscribe(watch)
        try:
            await kill_after_a_renewal(old, armed, killed)
            last_claim = leases[-1]
            await new.start()
            await system.submit(manifest)
            async with asyncio.timeout(60):
                await taken_over.wait()
                await carried_out.wait()
        finally:
            await asyncio.gather(old.stop(), new.stop())

    # the killed controller's last claim lasted the configured 2 s, and the replacement
    # took it over as a new holder (a transition), with the same short lease
    assert last_claim["spec"]["holderIdentity"] == "old"
    assert last_claim["spec"]["leaseDurationSeconds"] == 2
    (first_new,) = [obj for obj in leases if obj["spec"]["holderIdentity"] == "new"][:1]
    assert first_new["spec"]["leaseTransitions"] == last_claim["spec"]["leaseTransitions"] + 1
    assert first_new["spec"]["leaseDurationSeconds"] == 2, new.tail()
