"""Reading partitions from given offsets to their end now: to rebuild state before
consuming on (the decider's snapshots, the watchers' view of what the decider holds).

The end is the high watermark of the broker's first answer to a fetch of the partition:
`end_offsets` is not exact on every Kafka-compatible broker. A partition is read until
the broker has answered a fetch of it (an empty one too answers, with its watermark): a
fetch wait that ended with no answer yet says nothing, and taking it for an empty
partition lost whole snapshots under load. The end stays the one first answered: records
written while the read goes on are not waited for, or a read slower than the writers (a
new leader rebuilding the decider's view under 1,000 observations/s) would never end.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Iterator, Mapping

import structlog
from aiokafka import AIOKafkaConsumer, ConsumerRecord, TopicPartition

Records = list[ConsumerRecord[bytes, bytes]]

log = structlog.get_logger("lavalog.kafka")
#: seconds of reading after which a read not at its end yet says where each partition it
#: still waits for stands (and again each time as long): a rebuild that waits on a
#: partition the broker does not answer for is otherwise silent
SLOW_READ_SECONDS = 10.0


async def read_to_end(
    reader: AIOKafkaConsumer, starts: Mapping[TopicPartition, int], *, fetch_ms: int = 300
) -> dict[TopicPartition, Records]:
    """The records of these partitions from their start offsets (an offset no longer on
    the broker reads from the earliest, as lavalog's consumers reset) to their ends as
    the broker first answered them (a few records past them, fetched with them, too)."""
    records: dict[TopicPartition, Records] = {tp: [] for tp in starts}
    pending = list(starts)
    reader.assign(pending)
    for tp, offset in starts.items():
        reader.seek(tp, offset)
    #: each partition's end: its high watermark when the broker first answered for it
    ends: dict[TopicPartition, int] = {}
    clock = asyncio.get_running_loop().time
    started = clock()
    report_at = started + SLOW_READ_SECONDS
    while pending:
        batch = await reader.getmany(*pending, timeout_ms=fetch_ms)
        for tp, messages in batch.items():
            records[tp].extend(messages)
        left: dict[TopicPartition, tuple[int, int | None]] = {}
        for tp in pending:
            end = ends.get(tp)
            if end is None:
                end = reader.highwater(tp)  # None until the broker answered a fetch of it
                if end is not None:
                    ends[tp] = end
            position = await reader.position(tp)
            if end is None or position < end:
                left[tp] = (position, end)
        pending = list(left)
        if pending and clock() >= report_at:
            report_at = clock() + SLOW_READ_SECONDS
            log.warning(
                "still reading partitions to their end",
                seconds=round(clock() - started),
                waiting={
                    f"{tp.topic}[{tp.partition}]": {"position": at, "end": end}
                    for tp, (at, end) in left.items()
                },
            )
    return records


async def partitions_of(reader: AIOKafkaConsumer, topic: str) -> list[TopicPartition]:
    """The partitions `topic` has on the broker, which may differ from the count lavalog
    creates it with (a topic a broker created on first use takes the broker's default):
    reading one that does not exist would wait for an answer that never comes."""
    await reader.topics()  # fresh metadata
    return [TopicPartition(topic, n) for n in sorted(reader.partitions_for_topic(topic) or ())]


def keyed(records: Iterable[ConsumerRecord[bytes, bytes]]) -> Iterator[tuple[str, bytes | None]]:
    """(key as text, value) of each record: what a snapshot restore reads."""
    return ((r.key.decode(errors="replace") if r.key else "", r.value) for r in records)
