"""The decisions carried out past the committed offset, kept on `lavalog.actuated`.

Kafka keeps one committed offset per partition: the first decision not yet carried out.
Behind one slow decision the other jobs' lanes go on, and a crash would repeat all they
did. Commit metadata could say which are done, but not every broker keeps it (the
development broker drops it), so beside each commit that has decisions done past its
offset the actuator writes that `Progress` to `lavalog.actuated`: the same partition
number as the decisions, keyed by the consumer group, compacted. A member taking a
partition over reads the last record and skips those decisions. A record is never
wrong, only perhaps old: a decision once carried out stays carried out.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from aiokafka import AIOKafkaProducer, TopicPartition

from lavalog.controller.actuator.core.offsets import Progress
from lavalog.controller.kafka import KafkaSettings, create_consumer, create_producer, topic_name
from lavalog.events.topics import ACTUATED

#: how long reading the last records may take before the partitions are taken without
READ_SECONDS = 10.0


class ProgressLog:
    """Write and read one consumer group's progress records (`start` first, `stop` last)."""

    def __init__(self, settings: KafkaSettings, group_id: str) -> None:
        self._settings = settings
        self._topic = topic_name(settings, ACTUATED)
        self._key = group_id.encode()
        self._producer: AIOKafkaProducer = create_producer(settings)

    async def start(self) -> None:
        await self._producer.start()

    async def stop(self) -> None:
        await self._producer.stop()

    async def record(self, progress: dict[int, Progress]) -> None:
        """Store the progress of these decisions partitions that has decisions done past
        the offset (without any, the commit says it all)."""
        sent = [
            await self._producer.send(
                self._topic, stored.encode(), key=self._key, partition=partition
            )
            for partition, stored in progress.items()
            if stored.done
        ]
        await asyncio.gather(*sent)

    async def last(self, partitions: Iterable[int]) -> dict[int, Progress]:
        """The group's last record on each of these partitions, for those that have one."""
        wanted = {TopicPartition(self._topic, n) for n in partitions}
        if not wanted:
            return {}
        consumer = create_consumer(self._settings, group_id=None)
        await consumer.start()
        try:
            consumer.assign(list(wanted))
            ends = await consumer.end_offsets(list(wanted))
            waiting = {tp for tp in wanted if ends[tp] > 0}
            for tp in waiting:
                consumer.seek(tp, ends[tp] - 1)
            found: dict[int, Progress] = {}
            async with asyncio.timeout(READ_SECONDS):
                while waiting:
                    batches = await consumer.getmany(*waiting, timeout_ms=200)
                    for tp, messages in batches.items():
                        for message in messages:
                            if message.offset == ends[tp] - 1:
                                waiting.discard(tp)
                                stored = Progress.decode(message.value or b"")
                                if message.key == self._key and stored is not None:
                                    found[tp.partition] = stored
            return found
        finally:
            await consumer.stop()
