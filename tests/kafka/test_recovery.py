"""A killed group member's successor of the same identity takes its place at once.

A SIGKILLed process sends no LeaveGroup: its member would hold its partitions, and keep
the group from letting anyone in, until its session times out. A restarted process
with the same identity removes it first (controller/kafka/groups.py).
"""

from __future__ import annotations

import asyncio
import dataclasses
import signal
import sys
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
from aiokafka import AIOKafkaConsumer

from lavalog.controller.kafka import KafkaSettings, create_consumer, groups, topic_name
from lavalog.controller.kafka.groups import (
    REBALANCING_WITH_LEADER,
    Eviction,
    GroupLook,
    evict_predecessors,
    eviction,
    is_member_of,
    look_at_group,
    member_client_id,
)
from lavalog.controller.kafka.topics import group_name
from lavalog.events.topics import OBSERVED
from tests.conftest import _external_broker
from tests.kafka.test_leaderless import join_as_leader

#: long, so that a member evicted by its successor is told from one that timed out
SESSION_MS, HEARTBEAT_MS = 10_000, 1_000


def test_members_are_named_after_the_identity_and_recognised_exactly() -> None:
    settings = KafkaSettings(client_id="lavalog", group_instance_id="controller-7d9f-x2x4")
    client_id = member_client_id(settings)
    assert client_id == "lavalog@controller-7d9f-x2x4"
    assert member_client_id(KafkaSettings(client_id="lavalog")) == "lavalog"
    assert is_member_of(f"{client_id}-{uuid.uuid4()}", client_id)
    # another identity that merely starts with this one, a static member, another client
    assert not is_member_of(f"{client_id}-b-{uuid.uuid4()}", client_id)
    assert not is_member_of("controller-7d9f-x2x4-9a1b", client_id)
    assert not is_member_of(f"lavalog-{uuid.uuid4()}", client_id)


@asynccontextmanager
async def member_process(
    settings: KafkaSettings, group: str, identity: str, session_ms: int = SESSION_MS
) -> AsyncIterator[tuple[asyncio.subprocess.Process, str]]:
    """`tests.kafka.member` in a child process; yields it with its member id once joined."""
    process = await asyncio.create_subprocess_exec(
        *(
            sys.executable,
            "-m",
            "tests.kafka.member",
            settings.bootstrap_servers,
            settings.client_id,
            settings.topic_prefix,
        ),
        *(topic_name(settings, OBSERVED), group, identity, str(session_ms), str(HEARTBEAT_MS)),
        stdout=asyncio.subprocess.PIPE,
    )
    try:
        assert process.stdout is not None
        async with asyncio.timeout(60):
            line = (await process.stdout.readline()).decode()
        assert line.startswith("joined "), line
        yield process, line.split()[1]
    finally:
        if process.returncode is None:
            process.kill()
        await process.wait()


async def _until_assigned(consumer: AIOKafkaConsumer, partitions: int) -> None:
    async with asyncio.timeout(60):
        while len(consumer.assignment()) < partitions:
            await consumer.getmany(timeout_ms=100)


@pytest.mark.integration
async def test_a_restarted_member_of_the_same_identity_takes_over_before_the_old_session_ends(
    kafka_settings: KafkaSettings,
) -> None:
    settings = dataclasses.replace(
        kafka_settings,
        group_instance_id="replica-a",
        session_timeout_ms=SESSION_MS,
        heartbeat_interval_ms=HEARTBEAT_MS,
    )
    group = "decider"
    async with member_process(settings, group, "replica-a") as (process, old_member):
        assert is_member_of(old_member, member_client_id(settings))
        process.send_signal(signal.SIGKILL)
        await process.wait()
        killed = time.monotonic()

    restarted = create_consumer(settings, group_id=group)
    restarted.subscribe([topic_name(settings, OBSERVED)])
    async with restarted:
        await _until_assigned(restarted, settings.observed_partitions)
        assigned = time.monotonic()
        new_member = restarted._coordinator.member_id
        # the old member was removed, not timed out: its session (10 s from its last
        # heartbeat, at most 1 s before the kill) had not run out when the new one got
        # every partition
        assert new_member != old_member
        assert assigned < killed + (SESSION_MS - HEARTBEAT_MS) / 1000


@pytest.mark.integration
async def test_another_identitys_member_is_left_alone(kafka_settings: KafkaSettings) -> None:
    settings = dataclasses.replace(kafka_settings, group_instance_id="replica-b")
    group = "decider"
    async with member_process(settings, group, "replica-a") as (process, _):
        assert await evict_predecessors(settings, group_name(settings, group)) == []
        assert process.returncode is None


async def test_an_eviction_the_coordinator_holds_gives_way_to_a_normal_join(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A LeaveGroup held by the coordinator (tansu, during a rebalance) must not keep the
    process from starting: past the bound it joins without the eviction."""

    async def held(settings: KafkaSettings, group_id: str) -> list[str]:
        await asyncio.Event().wait()
        return ["never"]

    monkeypatch.setattr(groups, "_evict", held)
    monkeypatch.setattr(groups, "EVICTION_TIMEOUT", 0.05)
    settings = KafkaSettings(group_instance_id="replica-a")
    async with asyncio.timeout(5):
        assert await groups.evict_predecessors(settings, "decider") == []


@pytest.mark.integration
async def test_two_identities_restarted_one_after_the_other_both_get_in(
    kafka_settings: KafkaSettings,
) -> None:
    """Both replicas killed, then restarted in turn (`kill-both` in the chaos run): the
    first successor's LeaveGroup starts a rebalance, which the second must not stall."""
    session_ms = 3_000
    settings = dataclasses.replace(kafka_settings, session_timeout_ms=session_ms)
    group = "decider"
    # b joins first and so leads the group on tansu
    async with (
        member_process(settings, group, "replica-b", session_ms) as (process_b, _),
        member_process(settings, group, "replica-a", session_ms) as (process_a, _),
    ):
        for process in (process_a, process_b):
            process.send_signal(signal.SIGKILL)
            await process.wait()
    killed = time.monotonic()

    successors = []
    for identity in ("replica-a", "replica-b"):
        successor = create_consumer(
            dataclasses.replace(settings, group_instance_id=identity), group_id=group
        )
        successor.subscribe([topic_name(settings, OBSERVED)])
        await successor.start()
        successors.append(successor)
    try:
        async with asyncio.timeout(60):
            while sum(len(s.assignment()) for s in successors) < settings.observed_partitions:
                await asyncio.gather(*(s.getmany(timeout_ms=100) for s in successors))
        # a few sessions at most, not the minutes of a group without a leader
        assert time.monotonic() - killed < 5 * session_ms / 1000
    finally:
        for successor in successors:
            await successor.stop()


def test_a_predecessor_leading_a_rebalance_is_swept_the_others_leave_at_once() -> None:
    """tansu keeps a rebalance's leader that leaves by LeaveGroup (`Unknown`): such a
    predecessor is left to the coordinator's sweep of silent members."""
    a1, a2 = f"lavalog@a-{uuid.uuid4()}", f"lavalog@a-{uuid.uuid4()}"
    b1 = f"lavalog@b-{uuid.uuid4()}"
    members = frozenset({a1, a2, b1})
    rebalancing = GroupLook(REBALANCING_WITH_LEADER, a1, members)
    assert eviction(rebalancing, "lavalog@a") == Eviction(leave=(a2,), sweep=a1)
    led_by_b = GroupLook(REBALANCING_WITH_LEADER, b1, members)
    assert eviction(led_by_b, "lavalog@a") == Eviction(leave=tuple(sorted((a1, a2))), sweep=None)
    # a formed group's leader that leaves is replaced; Apache Kafka handles every case
    for state in ("Stable", "PreparingRebalance", "CompletingRebalance", "Empty"):
        look = GroupLook(state, a1, members)
        assert eviction(look, "lavalog@a") == Eviction(leave=tuple(sorted((a1, a2))), sweep=None)


@pytest.mark.integration
@pytest.mark.skipif(bool(_external_broker()), reason="tansu's fault; Apache Kafka has none")
async def test_a_predecessor_leading_a_rebalance_is_swept_out_and_the_group_keeps_no_ghost(
    kafka_settings: KafkaSettings,
) -> None:
    """The predecessor joined first, so it leads the rebalance, and was killed before its
    sync: removed by a LeaveGroup, it would stay the leader the group waits for."""
    settings = dataclasses.replace(kafka_settings, group_instance_id="replica-a")
    group_id = group_name(settings, "decider")
    topic = topic_name(settings, OBSERVED)
    client, coordinator, predecessor = await join_as_leader(
        settings, group_id, topic, client_id=member_client_id(settings)
    )
    try:
        assert await evict_predecessors(settings, group_id) == [predecessor]
        look = await look_at_group(client, coordinator, group_id)
        assert predecessor not in look.members
        assert look.leader != predecessor  # not a leader for the next members to wait for
    finally:
        await client.close()
