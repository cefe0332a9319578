"""A group whose rebalance leader left gets a leader again (controller/kafka/leaderless.py).

The integration test makes tansu's fault on purpose: a member joins first (so it leads
the rebalance) and leaves before it syncs. Without the repair, a consumer that joins
afterwards never gets a partition (the chaos run's stalled groups).
"""

from __future__ import annotations

import asyncio
import dataclasses

import pytest
from aiokafka.client import AIOKafkaClient, CoordinationType
from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
from aiokafka.errors import MemberIdRequired, for_code
from aiokafka.protocol.group import JoinGroupRequest, LeaveGroupRequest

from lavalog.controller.kafka import KafkaSettings, create_consumer, topic_name
from lavalog.controller.kafka.groups import REBALANCING_WITH_LEADER, GroupLook, look_at_group
from lavalog.controller.kafka.leaderless import (
    Moves,
    Repair,
    departed_leader,
    next_moves,
    repairs,
)
from lavalog.controller.kafka.security import connection_options
from lavalog.controller.kafka.topics import group_name
from lavalog.events.topics import OBSERVED
from tests.conftest import _external_broker


def test_a_leader_that_is_no_member_of_a_rebalancing_group_has_departed() -> None:
    waiting = GroupLook(REBALANCING_WITH_LEADER, "gone-1", frozenset({"a-1", "b-1"}))
    assert departed_leader(waiting) == "gone-1"
    present = GroupLook(REBALANCING_WITH_LEADER, "a-1", frozenset({"a-1", "b-1"}))
    assert departed_leader(present) is None
    assert departed_leader(GroupLook("Stable", "", frozenset({"a-1"}))) is None
    assert departed_leader(GroupLook(REBALANCING_WITH_LEADER, "", frozenset())) is None


def test_exactly_one_member_repairs() -> None:
    members = frozenset({"lavalog@b-2", "lavalog@a-9", "lavalog@c-1"})
    assert [m for m in sorted(members) if repairs(m, members)] == ["lavalog@a-9"]
    assert not repairs("lavalog@a-9", frozenset())


def _waiting(*members: str) -> GroupLook:
    return GroupLook(REBALANCING_WITH_LEADER, "gone-1", frozenset(members))


def test_the_smallest_member_switches_to_the_leaders_id_after_two_same_looks() -> None:
    repair, moves = next_moves(Repair(), _waiting("a-1", "b-1"), "a-1")
    assert moves == Moves()  # first sight
    repair, moves = next_moves(repair, _waiting("a-1", "b-1"), "a-1")
    assert moves == Moves(switch_to="gone-1")
    assert (repair.taking, repair.former) == ("gone-1", "a-1")


def test_a_group_that_changed_between_two_looks_is_looked_at_again() -> None:
    repair, _ = next_moves(Repair(), _waiting("a-1", "b-1"), "b-1")
    repair, moves = next_moves(repair, _waiting("b-1"), "b-1")
    assert moves == Moves()
    _, moves = next_moves(repair, _waiting("b-1"), "b-1")
    assert moves == Moves(switch_to="gone-1")


def test_the_former_id_leaves_only_once_the_leaders_id_is_back_in_the_group() -> None:
    """Until then the others see it as the smallest member, so none of them switches too."""
    repair, _ = next_moves(Repair(), _waiting("a-1", "b-1"), "a-1")
    repair, _ = next_moves(repair, _waiting("a-1", "b-1"), "a-1")
    # switched, its JoinGroup under the leader's id not answered yet
    repair, moves = next_moves(repair, _waiting("a-1", "b-1"), "gone-1")
    assert moves == Moves()
    assert all(
        next_moves(seen, _waiting("a-1", "b-1"), "b-1")[1] == Moves()
        for seen in (Repair(), Repair(_waiting("a-1", "b-1")))
    )
    formed = GroupLook("Stable", "", frozenset({"a-1", "b-1", "gone-1"}))
    repair, moves = next_moves(repair, formed, "gone-1")
    assert moves == Moves(leave="a-1")
    assert repair == Repair()


def test_a_switch_undone_by_a_join_in_flight_is_made_again() -> None:
    repair = Repair(_waiting("a-1", "b-1"), taking="gone-1", former="a-1")
    _, moves = next_moves(repair, _waiting("a-1", "b-1"), "a-1")
    assert moves == Moves(switch_to="gone-1")


async def join_as_leader(
    settings: KafkaSettings, group_id: str, topic: str, client_id: str = "departing"
) -> tuple[AIOKafkaClient, int, str]:
    """Join `group_id` first, so as to lead its rebalance, and never sync: the client, the
    coordinator and the member id (close the client when done)."""
    client = AIOKafkaClient(**connection_options(settings), client_id=client_id)
    await client.bootstrap()
    coordinator = await client.coordinator_lookup(CoordinationType.GROUP, group_id)
    assignor = RoundRobinPartitionAssignor
    protocols = [(assignor.name, assignor.metadata({topic}).encode())]
    timeout = settings.session_timeout_ms  # tansu keeps the first joiner's
    member_id = ""
    for _ in range(2):  # the first answer is MemberIdRequired, with the id to use
        answer = await client.send(
            coordinator,
            JoinGroupRequest(group_id, timeout, timeout, member_id, None, "consumer", protocols),
        )
        member_id = answer.member_id
        if answer.error_code != MemberIdRequired.errno:
            break
    assert answer.error_code == 0, for_code(answer.error_code)
    assert answer.leader_id == member_id  # it leads the rebalance
    return client, coordinator, str(member_id)


async def leave_while_leading(settings: KafkaSettings, group_id: str, topic: str) -> str:
    """Lead a rebalance of `group_id` and leave before syncing, as a leader stopped or
    evicted mid-rebalance does; the departed leader's member id."""
    client, coordinator, member_id = await join_as_leader(settings, group_id, topic)
    try:
        left = await client.send(coordinator, LeaveGroupRequest(group_id, member_id))
        assert left.error_code == 0
        return member_id
    finally:
        await client.close()


@pytest.mark.integration
@pytest.mark.skipif(bool(_external_broker()), reason="tansu's fault; Apache Kafka has none")
@pytest.mark.parametrize("subscribed", ["after start", "before start"])
async def test_a_group_whose_rebalance_leader_left_gets_a_leader_again(
    kafka_settings: KafkaSettings, subscribed: str
) -> None:
    """Subscribed before `start` (as the actuator is), the consumer waits in `start` until
    it has partitions: the repair must already be running then."""
    group_id = group_name(kafka_settings, "decider")
    topic = topic_name(kafka_settings, OBSERVED)
    departed = await leave_while_leading(kafka_settings, group_id, topic)

    consumer = create_consumer(kafka_settings, group_id="decider")
    if subscribed == "before start":
        consumer.subscribe([topic])
        starting = asyncio.create_task(consumer.start())
    else:
        starting = asyncio.create_task(consumer.start())
        await starting
        consumer.subscribe([topic])
    try:
        client = AIOKafkaClient(**connection_options(kafka_settings))
        await client.bootstrap()
        try:
            coordinator = await client.coordinator_lookup(CoordinationType.GROUP, group_id)
            # the fault is there: the group waits for the member that left (looked at
            # without getmany, which blocks until the group has formed)
            async with asyncio.timeout(10):
                look = await look_at_group(client, coordinator, group_id)
                while departed_leader(look) != departed:
                    await asyncio.sleep(0.05)  # the broker's state: nothing to wait on here
                    look = await look_at_group(client, coordinator, group_id)
        finally:
            await client.close()
        async with asyncio.timeout(20):
            await starting
            while len(consumer.assignment()) < kafka_settings.observed_partitions:
                await consumer.getmany(timeout_ms=100)
    finally:
        starting.cancel()
        await asyncio.gather(starting, return_exceptions=True)
        await consumer.stop()


@pytest.mark.integration
@pytest.mark.skipif(bool(_external_broker()), reason="tansu's fault; Apache Kafka has none")
async def test_of_two_members_waiting_for_a_departed_leader_one_takes_its_place(
    kafka_settings: KafkaSettings,
) -> None:
    """Both members see the fault; only the smallest switches to the leader's id, and the
    group forms with the partitions split between two distinct members (two members
    under one id would each be given every partition)."""
    group_id = group_name(kafka_settings, "actuator")
    topic = topic_name(kafka_settings, OBSERVED)
    await leave_while_leading(kafka_settings, group_id, topic)
    consumers = [
        create_consumer(
            dataclasses.replace(kafka_settings, group_instance_id=identity), group_id="actuator"
        )
        for identity in ("replica-a", "replica-b")
    ]
    for consumer in consumers:
        consumer.subscribe([topic])
    await asyncio.gather(*(consumer.start() for consumer in consumers))
    try:
        everything = set(range(kafka_settings.observed_partitions))

        def split() -> bool:
            owned = [{tp.partition for tp in c.assignment()} for c in consumers]
            return all(owned) and not owned[0] & owned[1] and owned[0] | owned[1] == everything

        async with asyncio.timeout(30):
            while not split():
                await asyncio.gather(*(c.getmany(timeout_ms=100) for c in consumers))
        ids = {consumer._coordinator.member_id for consumer in consumers}
        assert len(ids) == 2
    finally:
        await asyncio.gather(*(consumer.stop() for consumer in consumers))
