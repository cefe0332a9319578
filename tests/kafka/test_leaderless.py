"""A group whose rebalance leader left gets a leader again (controller/kafka/leaderless.py).

The integration test makes tansu's fault on purpose: a member joins first (so it leads
the rebalance) and leaves before it syncs. Without the repair, a consumer that joins
afterwards never gets a partition (the chaos run's stalled groups).
"""

from __future__ import annotations

import asyncio

import pytest
from aiokafka.client import AIOKafkaClient, CoordinationType
from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
from aiokafka.errors import MemberIdRequired, for_code
from aiokafka.protocol.group import JoinGroupRequest, LeaveGroupRequest

from controller.kafka import KafkaSettings, create_consumer, topic_name
from controller.kafka.groups import REBALANCING_WITH_LEADER
from controller.kafka.leaderless import GroupLook, _look, departed_leader, repairs
from controller.kafka.security import connection_options
from controller.kafka.topics import group_name
from events.topics import OBSERVED
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


async def leave_while_leading(settings: KafkaSettings, group_id: str, topic: str) -> str:
    """Join `group_id` first, so as to lead its rebalance, and leave before syncing, as a
    leader stopped or evicted mid-rebalance does; the departed leader's member id."""
    client = AIOKafkaClient(**connection_options(settings), client_id="departing")
    await client.bootstrap()
    try:
        coordinator = await client.coordinator_lookup(CoordinationType.GROUP, group_id)
        assignor = RoundRobinPartitionAssignor
        protocols = [(assignor.name, assignor.metadata({topic}).encode())]
        timeout = settings.session_timeout_ms  # tansu keeps the first joiner's
        member_id = ""
        for _ in range(2):  # the first answer is MemberIdRequired, with the id to use
            answer = await client.send(
                coordinator,
                JoinGroupRequest(
                    group_id, timeout, timeout, member_id, None, "consumer", protocols
                ),
            )
            member_id = answer.member_id
            if answer.error_code != MemberIdRequired.errno:
                break
        assert answer.error_code == 0, for_code(answer.error_code)
        assert answer.leader_id == member_id  # it leads the rebalance
        left = await client.send(coordinator, LeaveGroupRequest(group_id, member_id))
        assert left.error_code == 0
        return str(member_id)
    finally:
        await client.close()


@pytest.mark.integration
@pytest.mark.skipif(bool(_external_broker()), reason="tansu's fault; Apache Kafka has none")
async def test_a_group_whose_rebalance_leader_left_gets_a_leader_again(
    kafka_settings: KafkaSettings,
) -> None:
    group_id = group_name(kafka_settings, "decider")
    topic = topic_name(kafka_settings, OBSERVED)
    departed = await leave_while_leading(kafka_settings, group_id, topic)

    consumer = create_consumer(kafka_settings, group_id="decider")
    await consumer.start()
    try:
        consumer.subscribe([topic])
        client = AIOKafkaClient(**connection_options(kafka_settings))
        await client.bootstrap()
        try:
            coordinator = await client.coordinator_lookup(CoordinationType.GROUP, group_id)
            # the fault is there: the group waits for the member that left (looked at
            # without getmany, which blocks until the group has formed)
            async with asyncio.timeout(10):
                look = await _look(client, coordinator, group_id)
                while departed_leader(look) != departed:
                    await asyncio.sleep(0.05)  # the broker's state: nothing to wait on here
                    look = await _look(client, coordinator, group_id)
        finally:
            await client.close()
        async with asyncio.timeout(20):
            while len(consumer.assignment()) < kafka_settings.observed_partitions:
                await consumer.getmany(timeout_ms=100)
    finally:
        await consumer.stop()
