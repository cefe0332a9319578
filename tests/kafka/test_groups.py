"""Consumer groups on the broker: members split partitions, rebalance, and keep offsets.

This is what the decider, the actuator and the projections scale with; the timings
(tansu needs about 3 s per join or rebalance) are in docs/kafka.md.
"""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from collections.abc import Callable

import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.structs import OffsetAndMetadata

from lavalog.controller.kafka import (
    KafkaSettings,
    create_consumer,
    create_producer,
    ensure_topics,
    topic_name,
)
from lavalog.events.topics import OBSERVED

pytestmark = pytest.mark.integration


def _partitions(consumer: AIOKafkaConsumer) -> set[int]:
    return {tp.partition for tp in consumer.assignment()}


async def _poll_until(condition: Callable[[], bool], *consumers: AIOKafkaConsumer) -> None:
    """Keep every member polling (heartbeats, rebalances) until `condition` holds."""
    async with asyncio.timeout(60):
        while not condition():
            await asyncio.gather(*(consumer.getmany(timeout_ms=100) for consumer in consumers))


async def test_two_members_split_the_partitions_and_one_takes_all_when_the_other_leaves(
    kafka_settings: KafkaSettings,
) -> None:
    topic = topic_name(kafka_settings, OBSERVED)
    group = "decider"
    everything = set(range(kafka_settings.observed_partitions))
    first = create_consumer(kafka_settings, group_id=group)
    second = create_consumer(kafka_settings, group_id=group)
    first.subscribe([topic])
    second.subscribe([topic])
    async with first:
        await _poll_until(lambda: _partitions(first) == everything, first)
        async with second:
            await _poll_until(
                lambda: (
                    bool(_partitions(first))
                    and bool(_partitions(second))
                    and _partitions(first) | _partitions(second) == everything
                ),
                first,
                second,
            )
            assert not _partitions(first) & _partitions(second)
            assert len(_partitions(first)) == len(_partitions(second))
        # The second member left the group (LeaveGroup on stop): the first gets its share.
        await _poll_until(lambda: _partitions(first) == everything, first)


async def test_committed_offsets_survive_a_consumer_restart(kafka_settings: KafkaSettings) -> None:
    topic = topic_name(kafka_settings, OBSERVED)
    group = f"projection-{uuid.uuid4().hex[:6]}"
    partition = TopicPartition(topic, 0)
    async with create_producer(kafka_settings) as producer:
        for n in range(10):
            await producer.send_and_wait(topic, f"{n}".encode(), partition=0)

    # Subscribed, as the services are: the restarted member fetches the group's offsets
    # when the partitions are assigned to it.
    consumer = create_consumer(kafka_settings, group_id=group)
    consumer.subscribe([topic])
    async with consumer:
        await _poll_until(lambda: partition in consumer.assignment(), consumer)
        first = await consumer.getmany(partition, timeout_ms=5000, max_records=4)
        assert [m.value for m in first[partition]] == [b"0", b"1", b"2", b"3"]
        await consumer.commit({partition: OffsetAndMetadata(4, "")})

    restarted = create_consumer(kafka_settings, group_id=group)
    restarted.subscribe([topic])
    async with restarted:
        await _poll_until(lambda: partition in restarted.assignment(), restarted)
        assert await restarted.committed(partition) == 4
        resumed = await restarted.getmany(partition, timeout_ms=5000)
        assert [m.value for m in resumed[partition]] == [f"{n}".encode() for n in range(4, 10)]


async def test_installations_sharing_a_broker_do_not_share_a_group(
    kafka_settings: KafkaSettings,
) -> None:
    """Groups are named under the topic prefix: another installation's member joining
    `decider` does not make this installation's group rebalance."""
    other = dataclasses.replace(kafka_settings, topic_prefix=f"other-{uuid.uuid4().hex[:8]}.")
    await ensure_topics(other)
    ours = create_consumer(kafka_settings, group_id="decider")
    theirs = create_consumer(other, group_id="decider")
    ours.subscribe([topic_name(kafka_settings, OBSERVED)])
    theirs.subscribe([topic_name(other, OBSERVED)])
    everything = set(range(kafka_settings.observed_partitions))
    async with ours:
        await _poll_until(lambda: _partitions(ours) == everything, ours)
        generation = ours._coordinator.generation
        async with theirs:
            await _poll_until(lambda: _partitions(theirs) == everything, ours, theirs)
            assert ours._coordinator.generation == generation
