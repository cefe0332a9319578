"""Partitions read to their end: nothing is taken for empty before the broker said so."""

from __future__ import annotations

import pytest
from aiokafka import TopicPartition

from lavalog.controller.kafka import KafkaSettings, create_consumer, create_producer, topic_name
from lavalog.controller.kafka.reading import read_to_end
from lavalog.events.topics import STATE

pytestmark = pytest.mark.integration


async def test_a_partition_is_read_to_its_end_however_slowly_the_broker_answers(
    kafka_settings: KafkaSettings,
) -> None:
    """A fetch wait shorter than the broker's first answer (here 1 ms; in the churn run a
    loaded broker took longer than 300 ms) leaves the end unknown: that is not an empty
    partition. A decider took its snapshots so for none and rebuilt from the start."""
    topic = topic_name(kafka_settings, STATE)
    stored, empty = TopicPartition(topic, 0), TopicPartition(topic, 1)
    async with create_producer(kafka_settings) as producer:
        for n in range(3):
            await producer.send_and_wait(topic, b"%d" % n, key=b"k%d" % n, partition=0)
    reader = create_consumer(kafka_settings, group_id=None)
    async with reader:
        found = await read_to_end(reader, {stored: 0, empty: 0}, fetch_ms=1)
    assert [record.value for record in found[stored]] == [b"0", b"1", b"2"]
    assert found[empty] == []
