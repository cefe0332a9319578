"""Partitions read to their end: nothing is taken for empty before the broker said so."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest
from aiokafka import TopicPartition
from structlog.testing import capture_logs

from lavalog.controller.kafka import (
    KafkaSettings,
    create_consumer,
    create_producer,
    reading,
    topic_name,
)
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


async def test_a_read_that_waits_long_says_which_partitions_it_waits_for(
    kafka_settings: KafkaSettings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A partition the broker does not answer for (here: one the topic does not have)
    holds a rebuild up without end; the read says so, with where each one stands."""
    monkeypatch.setattr(reading, "SLOW_READ_SECONDS", 0.2)
    missing = TopicPartition(topic_name(kafka_settings, STATE), 999)
    reader = create_consumer(kafka_settings, group_id=None)
    async with reader:
        with capture_logs() as logs, pytest.raises(TimeoutError):
            await asyncio.wait_for(read_to_end(reader, {missing: 0}, fetch_ms=50), 2.0)
    said = [entry for entry in logs if entry["event"] == "still reading partitions to their end"]
    assert said, logs
    assert said[0]["waiting"] == {f"{missing.topic}[999]": {"position": 0, "end": None}}


class _BehindWriters:
    """A reader whose every fetch brings `per_fetch` records while writers add more: the
    partition's high watermark moves on faster than the reader (what a loaded broker's
    fetch of at most `max_partition_fetch_bytes` looks like under a busy log)."""

    def __init__(self, tp: TopicPartition, *, written: int, per_fetch: int, added: int) -> None:
        self.tp, self.written, self.per_fetch, self.added = tp, written, per_fetch, added
        self.at = 0
        self.answered = False

    def assign(self, partitions: list[TopicPartition]) -> None:
        pass

    def seek(self, tp: TopicPartition, offset: int) -> None:
        self.at = offset

    async def getmany(self, *partitions: TopicPartition, timeout_ms: int) -> Any:
        await asyncio.sleep(0)
        upto = min(self.at + self.per_fetch, self.written)
        fetched = [SimpleNamespace(offset=n) for n in range(self.at, upto)]
        self.at, self.answered = upto, True
        self.written += self.added  # written meanwhile
        return {self.tp: fetched} if fetched else {}

    def highwater(self, tp: TopicPartition) -> int | None:
        return self.written if self.answered else None

    async def position(self, tp: TopicPartition) -> int:
        return self.at


async def test_a_read_ends_at_the_end_first_answered_while_writers_go_on() -> None:
    """A new leader rebuilding the decider's view read `lavalog.observed` while 1,000
    observations/s were written to it, more slowly than they came: chasing the moving end,
    the read never ended, the leader never watched, and no failed pod was replaced."""
    tp = TopicPartition("observed", 0)
    reader = _BehindWriters(tp, written=100, per_fetch=10, added=20)
    found = await asyncio.wait_for(read_to_end(reader, {tp: 0}), 5.0)
    assert [record.offset for record in found[tp]][:120] == list(range(120))
    assert len(found[tp]) < 200
