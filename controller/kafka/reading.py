"""Reading partitions from given offsets to their end now: to rebuild state before
consuming on (the decider's snapshots, the watchers' view of what the decider holds).

The end is the high watermark seen after a fetch: `end_offsets` is not exact on every
Kafka-compatible broker. A partition is read until the broker has answered a fetch of it
(an empty one too answers, with its watermark): a fetch wait that ended with no answer
yet says nothing, and taking it for an empty partition lost whole snapshots under load.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping

from aiokafka import AIOKafkaConsumer, ConsumerRecord, TopicPartition

Records = list[ConsumerRecord[bytes, bytes]]


async def read_to_end(
    reader: AIOKafkaConsumer, starts: Mapping[TopicPartition, int], *, fetch_ms: int = 300
) -> dict[TopicPartition, Records]:
    """The records of these partitions from their start offsets (an offset no longer on
    the broker reads from the earliest, as lavalog's consumers reset) to their ends."""
    records: dict[TopicPartition, Records] = {tp: [] for tp in starts}
    pending = list(starts)
    reader.assign(pending)
    for tp, offset in starts.items():
        reader.seek(tp, offset)
    while pending:
        batch = await reader.getmany(*pending, timeout_ms=fetch_ms)
        for tp, messages in batch.items():
            records[tp].extend(messages)
        left = []
        for tp in pending:
            end = reader.highwater(tp)  # None until the broker answered a fetch of it
            if end is None or await reader.position(tp) < end:
                left.append(tp)
        pending = left
    return records


def keyed(records: Iterable[ConsumerRecord[bytes, bytes]]) -> Iterator[tuple[str, bytes | None]]:
    """(key as text, value) of each record: what a snapshot restore reads."""
    return ((r.key.decode(errors="replace") if r.key else "", r.value) for r in records)
