"""Records produced one batch per partition land where `send` puts them, in order."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from aiokafka import TopicPartition

from lavalog.controller.kafka import KafkaSettings, create_consumer, create_producer, topic_name
from lavalog.controller.kafka.batches import PartitionBatches
from lavalog.controller.kafka.local_delivery import LocalDelivery
from lavalog.events.topics import DECISIONS

pytestmark = pytest.mark.integration


async def _read_all(settings: KafkaSettings, topic: str, count: int) -> list[Any]:
    consumer = create_consumer(settings, group_id=None)
    async with consumer:
        partitions = [TopicPartition(topic, n) for n in range(settings.decisions_partitions)]
        consumer.assign(partitions)
        await consumer.seek_to_beginning(*partitions)
        records: list[Any] = []
        async with asyncio.timeout(30):
            while len(records) < count:
                for messages in (await consumer.getmany(timeout_ms=200)).values():
                    records += messages
        return records


async def test_batched_records_land_on_the_partition_send_chooses_in_the_order_added(
    kafka_settings: KafkaSettings,
) -> None:
    topic = topic_name(kafka_settings, DECISIONS)
    keys = [f"ns/job-{n}".encode() for n in range(40)]
    # Small batches, so that some fill up and are sent before the flush.
    producer = create_producer(kafka_settings, max_batch_size=1_024)
    async with producer:
        batches = PartitionBatches(producer, topic)
        await batches.prepare()
        deliveries = []
        for sequence in range(10):
            for key in keys:
                if batches.add(key, b"%s:%d" % (key, sequence)):
                    deliveries += await batches.send_full()
        sent_early = len(deliveries)
        deliveries += await batches.flush()
        await asyncio.gather(*deliveries)
        # The same keys through `send`, one record each, for the partitions it chooses.
        chosen = {
            key: (await (await producer.send(topic, b"reference", key=key))).partition
            for key in keys
        }
    assert sent_early > 0, "no batch filled up: the test did not cover a full batch"

    records = await _read_all(kafka_settings, topic, 11 * len(keys))
    batched = [record for record in records if record.value != b"reference"]
    assert len(batched) == 10 * len(keys)
    for record in batched:
        assert record.partition == chosen[record.key]
    for key in keys:
        values = [record.value for record in batched if record.key == key]
        assert values == [b"%s:%d" % (key, sequence) for sequence in range(10)]


async def test_batches_hand_each_record_over_at_the_offset_a_fetch_reads_it_at(
    kafka_settings: KafkaSettings,
) -> None:
    """The offset acknowledged for a batch is its first record's: the records handed over
    in this process are exactly what consumers read, place for place."""
    topic = topic_name(kafka_settings, DECISIONS)
    keys = [f"ns/job-{n}".encode() for n in range(12)]
    local = LocalDelivery()
    feed = local.subscribe(topic, lambda _: True)
    producer = create_producer(kafka_settings, max_batch_size=512)
    async with producer:
        batches = PartitionBatches(producer, topic, local=local)
        await batches.prepare()
        deliveries = []
        for sequence in range(6):
            for key in keys:
                if batches.add(key, b"%s:%d" % (key, sequence)):
                    deliveries += await batches.send_full()
        deliveries += await batches.flush()
        await asyncio.gather(*deliveries)
        await asyncio.sleep(0)  # the deliveries' callbacks

    records = await _read_all(kafka_settings, topic, 6 * len(keys))
    handed_over = [record for number in feed.partitions() for record in feed.take(number, 0)]
    assert len(deliveries) > len(feed.partitions()), "one batch a partition: nothing shown"
    assert sorted(map(_place, handed_over)) == sorted(map(_place, records))


def _place(record: Any) -> tuple[int, int, bytes, bytes]:
    return (record.partition, record.offset, record.key, record.value)
