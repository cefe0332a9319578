"""Lavalog events through the broker: keyed by job, one job's facts on one partition, in order."""

from __future__ import annotations

import asyncio
from collections import defaultdict

import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.partitioner import murmur2

from lavalog.controller.kafka import KafkaSettings, create_consumer, create_producer, topic_name
from lavalog.events import codec
from lavalog.events.observations import PodObserved
from lavalog.events.topics import OBSERVED, job_key

pytestmark = pytest.mark.integration

PHASES = ("Pending", "Running", "Failed", "Pending", "Running", "Succeeded")


def _observation(key: str, sequence: int) -> PodObserved:
    return PodObserved(
        id=f"{key}/{sequence}",
        key=key,
        job_uid=f"uid-{key}",
        time=1_700_000_000.0 + sequence,
        pod=f"{key.split('/')[1]}-worker-0",
        pod_uid=f"pod-{key}",
        task="worker",
        index=0,
        job_version=sequence // 3,
        phase=PHASES[sequence % len(PHASES)],
    )


async def _consume_all(consumer: AIOKafkaConsumer, count: int) -> list[tuple[int, PodObserved]]:
    """(partition, event) of `count` messages, in each partition's order."""
    received: list[tuple[int, PodObserved]] = []
    while len(received) < count:
        batches = await consumer.getmany(timeout_ms=500)
        for tp, messages in batches.items():
            for message in messages:
                assert message.value is not None
                event = codec.decode_observation(message.value)
                assert isinstance(event, PodObserved)
                assert message.key == event.key.encode()
                assert dict(message.headers) == {"schema": b"1"}
                received.append((tp.partition, event))
    return received


async def test_events_keyed_by_job_land_on_one_partition_in_order(
    kafka_settings: KafkaSettings,
) -> None:
    topic = topic_name(kafka_settings, OBSERVED)
    keys = [job_key("team-a", f"job-{n}") for n in range(40)]
    sent = [_observation(key, sequence) for sequence in range(6) for key in keys]
    async with create_producer(kafka_settings) as producer:
        # Sends without awaiting each one: the producer batches them (linger_ms).
        acks = [
            await producer.send(
                topic, codec.encode(event), key=event.key.encode(), headers=[("schema", b"1")]
            )
            for event in sent
        ]
        await asyncio.gather(*acks)

    consumer = create_consumer(kafka_settings, group_id=None)
    async with consumer:
        consumer.assign(
            [TopicPartition(topic, p) for p in range(kafka_settings.observed_partitions)]
        )
        received = await _consume_all(consumer, len(sent))

    assert len(received) == len(sent)
    assert {event.id: event for _, event in received} == {event.id: event for event in sent}
    partitions_of: dict[str, set[int]] = defaultdict(set)
    order_of: dict[str, list[int]] = defaultdict(list)
    for partition, event in received:
        partitions_of[event.key].add(partition)
        order_of[event.key].append(int(event.id.rsplit("/", 1)[1]))
    # The partition is Java's (murmur2), so clients in other languages agree on it.
    assert all(
        partitions == {(murmur2(key.encode()) & 0x7FFFFFFF) % kafka_settings.observed_partitions}
        for key, partitions in partitions_of.items()
    )
    assert all(order == list(range(6)) for order in order_of.values())
    assert len({p for partitions in partitions_of.values() for p in partitions}) > 1
