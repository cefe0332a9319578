"""What the development broker does differently from Apache Kafka, pinned.

docs/kafka.md builds on these; when a tansu upgrade makes one fail, update the doc and
the code that works around it (then drop or invert the test).
"""

from __future__ import annotations

import asyncio
import os

import pytest
from aiokafka import TopicPartition
from aiokafka.errors import KafkaError

from lavalog.controller.kafka import KafkaSettings, create_consumer, create_producer, topic_name
from lavalog.events.topics import DEADLETTER

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        bool(os.environ.get("LAVALOG_TEST_BOOTSTRAP_SERVERS")), reason="tansu's own behaviour"
    ),
]


async def _send_one_batch(settings: KafkaSettings, topic: str, count: int) -> None:
    async with create_producer(settings) as producer:
        sent = [await producer.send(topic, f"{n}".encode(), partition=0) for n in range(count)]
        await asyncio.gather(*sent)


async def test_end_offsets_count_batches_but_the_fetch_highwater_is_exact(
    kafka_settings: KafkaSettings,
) -> None:
    topic = topic_name(kafka_settings, DEADLETTER)
    partition = TopicPartition(topic, 0)
    await _send_one_batch(kafka_settings, topic, 10)
    async with create_consumer(kafka_settings, group_id=None) as consumer:
        consumer.assign([partition])
        # Apache Kafka answers 10: tansu answers the last batch's base offset + 1.
        assert await consumer.end_offsets([partition]) == {partition: 1}
        fetched = await consumer.getmany(partition, timeout_ms=5000)
        assert len(fetched[partition]) == 10
        assert consumer.highwater(partition) == 10


async def test_the_idempotent_producer_is_not_available(kafka_settings: KafkaSettings) -> None:
    producer = create_producer(kafka_settings, enable_idempotence=True)
    try:
        with pytest.raises(KafkaError):
            await producer.start()  # InitProducerId fails
    finally:
        await producer.stop()


async def test_producing_to_a_missing_topic_creates_it_with_tansus_defaults(
    kafka_settings: KafkaSettings,
) -> None:
    topic = f"{kafka_settings.topic_prefix}not-created"
    async with create_producer(kafka_settings) as producer:
        await producer.send_and_wait(topic, b"x")
        # Not the configured layout: run `ensure_topics` before producing.
        assert await producer.partitions_for(topic) == {0, 1, 2, 3}
