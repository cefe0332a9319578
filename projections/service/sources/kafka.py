"""`lavalog.observed` and `lavalog.decisions` as a runner source.

Offsets live in the store, in the transaction of the data they produced, so Kafka's
committed offsets are not used: on every assignment the consumer seeks to the store's
positions (or the beginning of a partition the store never read). With a group
(`lavalog-projections`) replicas share the partitions; without one (a rebuild) the
source reads every partition and can stop at the end offsets it saw when it started.
Before it subscribes, the source creates the topics lavalog's controller would (a broker
that creates a subscribed topic itself gives it its own default partition count, which
the controller then finds instead of its own).

With a group, a fetch waits on the broker as long as the runner waits between two
transactions (`runner.COMMIT_INTERVAL`), unless the settings ask for longer: tansu
answers a waiting fetch only when its wait runs out, so at the controller's 20 ms the
consumer sent and decoded fifty fetches a second for a store that takes their records
five times a second.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any

import structlog
from aiokafka import ConsumerRebalanceListener, TopicPartition

from lavalog.controller.kafka import KafkaSettings, create_consumer, ensure_topics, topic_name
from lavalog.events.codec import DecodeError, LogEvent
from lavalog.events.topics import DECISIONS, OBSERVED
from lavalog.projections.core.decoding import decode_event
from lavalog.projections.core.feed import Batch, Run
from lavalog.projections.service.runner import COMMIT_INTERVAL
from lavalog.projections.service.store.writer import Store

GROUP_ID = "lavalog-projections"
log = structlog.get_logger(__name__)


class _SeekToStore(ConsumerRebalanceListener):  # type: ignore[misc]
    def __init__(self, consumer: Any, store: Store) -> None:
        self._consumer = consumer
        self._store = store

    async def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        """Nothing to flush: every applied batch is already committed with its positions."""

    async def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        await _seek(self._consumer, self._store, assigned)


async def _seek(consumer: Any, store: Store, partitions: set[TopicPartition]) -> None:
    by_topic = {topic: store.positions(topic) for topic in {tp.topic for tp in partitions}}
    for tp in partitions:
        offset = by_topic[tp.topic].get(tp.partition)
        if offset is None:
            await consumer.seek_to_beginning(tp)
        else:
            consumer.seek(tp, offset)


def fetch_wait_ms(settings: KafkaSettings, *, grouped: bool) -> int:
    """How long a fetch waits on the broker: the settings' for a rebuild, which reads
    as fast as it can, and at least the runner's commit interval for the service's group."""
    if not grouped:
        return settings.fetch_max_wait_ms
    return max(settings.fetch_max_wait_ms, round(COMMIT_INTERVAL * 1000))


class KafkaSource:
    """Both public topics, from the store's positions on."""

    def __init__(
        self,
        settings: KafkaSettings,
        *,
        group_id: str | None = GROUP_ID,
        until_end: bool = False,
        max_records: int = 10_000,
        poll_ms: int = 200,
    ) -> None:
        self._settings = settings
        self._group_id = group_id
        self._until_end = until_end
        self._max_records = max_records
        self._poll_ms = poll_ms
        self._lag: dict[tuple[str, int], int] = {}
        self._caught_up = False
        #: where each partition started (until_end only)
        self._starts: dict[TopicPartition, int] = {}
        #: messages to read in all (until_end only) and read so far, for a progress bar
        self.total = 0
        self.consumed = 0

    @property
    def topics(self) -> list[str]:
        return [topic_name(self._settings, OBSERVED), topic_name(self._settings, DECISIONS)]

    @property
    def caught_up(self) -> bool:
        return self._caught_up

    def lag(self) -> Mapping[tuple[str, int], int]:
        return dict(self._lag)

    async def batches(self, store: Store) -> AsyncIterator[Batch]:
        if self._until_end and self._group_id is not None:
            raise ValueError("a source that stops at the end reads without a group")
        if self._group_id is not None:
            await ensure_topics(self._settings)
        consumer = create_consumer(
            self._settings,
            group_id=self._group_id,
            max_poll_records=self._max_records,
            fetch_max_wait_ms=fetch_wait_ms(self._settings, grouped=self._group_id is not None),
        )
        ends: dict[TopicPartition, int] = {}
        try:  # stopped however this ends, a failed start included (no "Unclosed consumer")
            if self._group_id is not None:
                consumer.subscribe(self.topics, listener=_SeekToStore(consumer, store))
                await consumer.start()
            else:
                await consumer.start()
                partitions = {
                    TopicPartition(topic, partition)
                    for topic in self.topics
                    for partition in consumer.partitions_for_topic(topic) or ()
                }
                consumer.assign(list(partitions))
                await _seek(consumer, store, partitions)
                ends = await consumer.end_offsets(list(partitions))
                self._starts = {tp: await consumer.position(tp) for tp in partitions}
                self.total = sum(max(0, ends[tp] - self._starts[tp]) for tp in partitions)
            while True:
                records = await consumer.getmany(timeout_ms=self._poll_ms)
                batch = self._decode(records)
                await self._measure(consumer, ends)
                yield batch  # even empty: the runner learns that the source caught up
                if self._caught_up and self._until_end:
                    return
        finally:
            await consumer.stop()

    def _decode(self, records: Mapping[TopicPartition, list[Any]]) -> Batch:
        raws: list[bytes] = []
        offsets: list[int] = []
        events: list[LogEvent] = []
        runs: list[Run] = []
        for tp, messages in records.items():
            for message in messages:
                value: bytes = message.value
                offset: int = message.offset
                self.consumed += 1
                try:
                    event = decode_event(value)
                except DecodeError as exc:
                    log.warning(
                        "skipping a message that is no event",
                        topic=tp.topic,
                        partition=tp.partition,
                        offset=offset,
                        error=str(exc),
                    )
                    continue
                events.append(event)
                raws.append(value)
                offsets.append(offset)
            runs.append((tp.topic, tp.partition, len(raws)))
        return Batch(raws, offsets, runs, events=events)

    async def _measure(self, consumer: Any, ends: Mapping[TopicPartition, int]) -> None:
        """Lag per partition; caught up once every partition reached its end.

        The end is the larger of the end offset seen at start (until_end) and the high
        watermark of the last fetch: tansu's ListOffsets answers less than the high
        watermark once a partition holds a multi-record batch. A partition neither
        fetched from nor measured at start asks the broker."""
        assigned = set(consumer.assignment())
        highs = {tp: max(ends.get(tp, 0), consumer.highwater(tp) or 0) for tp in assigned}
        unknown = [tp for tp in assigned if consumer.highwater(tp) is None and tp not in ends]
        if unknown:
            highs.update(await consumer.end_offsets(unknown))
        lag: dict[tuple[str, int], int] = {}
        for tp, high in highs.items():
            lag[tp.topic, tp.partition] = max(0, high - await consumer.position(tp))
        self._lag = lag
        if self._starts:
            self.total = sum(max(0, highs[tp] - start) for tp, start in self._starts.items())
        if assigned and not any(lag.values()):
            self._caught_up = True
