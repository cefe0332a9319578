"""A partition handed over is snapshotted only at a position its states really reflect,
and only once every job its checkpoint stands for is written.

Found in the churn run: a revocation came while a fetch's decisions were still being
delivered; the released partition was snapshotted with states that already held that
fetch but checkpointed at the position before it, so its next owner applied the fetch
a second time (a pod's failure counted twice: RestartTask decided again and the job
Failed one retry early).

Found in the chaos run: while one partition's snapshot was written at a handover, a
fetch of another one being handed over was decided and its snapshot queued; that
partition was let go before the snapshot was written, so it was dropped, and the
handover's own snapshot checkpointed past jobs it did not hold. Its next owner knew
nothing of those finished jobs and admitted them again when the watchers listed them.

A partition revoked while its fetch's decisions are delivered is left out of the commit
after them, which would otherwise fail for every partition it names.
"""

from __future__ import annotations

import asyncio
from typing import Any

from aiokafka import ConsumerRecord, TopicPartition

from lavalog.controller.decider.core.partition import PartitionDecider
from lavalog.controller.decider.core.snapshots import (
    Restored,
    SnapshotRecord,
    encode_record,
    restore,
)
from lavalog.controller.decider.service.runner import DeciderService
from lavalog.controller.kafka import KafkaSettings
from lavalog.events.codec import encode
from tests.examples.scripts import (
    evicted_timeout_cancelled,
    max_retry_exhausted,
    mpi_exit_code_restart,
    tensorflow_restart_task,
)


def owning(decided: int, delivered: int) -> tuple[DeciderService, list[int]]:
    """A service owning partition 0, whose states hold the first `decided` observations
    while its position (what was delivered) is `delivered`; and where it snapshots."""
    service = DeciderService(kafka=KafkaSettings())
    partition = PartitionDecider(Restored(), committed=0)
    for offset, observation in enumerate(tensorflow_restart_task()[:decided]):
        partition.apply(offset, observation)
    service._partitions[0] = partition
    service._positions[0] = delivered
    snapshots: list[int] = []

    async def snapshot(number: int, partition: PartitionDecider, next_offset: int) -> None:
        snapshots.append(next_offset)

    service._snapshot = snapshot  # type: ignore[method-assign]
    return service, snapshots


async def test_a_partition_released_between_fetches_is_snapshotted_at_its_position() -> None:
    service, snapshots = owning(decided=6, delivered=6)
    await service._release([0])
    assert snapshots == [6]
    assert service._partitions == {}


async def test_a_partition_released_while_a_fetch_is_delivered_is_not_snapshotted() -> None:
    service, snapshots = owning(decided=9, delivered=6)
    await service._release([0])
    assert snapshots == []  # its next owner replays from the last snapshot
    assert service._partitions == {}


async def test_a_snapshot_queued_while_another_partition_is_handed_over_is_written() -> None:
    service = DeciderService(kafka=KafkaSettings())
    mine = PartitionDecider(Restored(), committed=0)
    theirs = PartitionDecider(Restored(), committed=0)
    first, second, third = tensorflow_restart_task(), mpi_exit_code_restart(), max_retry_exhausted()
    for offset, observation in enumerate(evicted_timeout_cancelled()):
        mine.apply(offset, observation)
    for offset, observation in enumerate(first):
        theirs.apply(offset, observation)
    service._partitions.update({0: mine, 2: theirs})
    service._positions.update({0: mine.applied_to, 2: len(first)})
    written: dict[int, list[tuple[str, bytes | None]]] = {0: [], 2: []}

    async def write(number: int, records: list[tuple[str, SnapshotRecord | None]]) -> None:
        written[number] += [(k, None if r is None else encode_record(r)) for k, r in records]
        if number == 0:  # meanwhile the consume task decides two fetches of partition 2
            decide(second, snapshot_due=True)
            decide(third, snapshot_due=False)

    def decide(observations: list[Any], *, snapshot_due: bool) -> None:
        start = service._positions[2]
        for offset, observation in enumerate(observations, start=start):
            theirs.apply(offset, observation)
        service._positions[2] = theirs.applied_to
        if snapshot_due:  # as `_decide_batches` queues a snapshot that is due
            taken = service._take_snapshot(2, theirs, theirs.applied_to)
            service._queue_checkpoint({}, [(2, taken)])

    service._write_snapshot = write  # type: ignore[method-assign]
    await service._release([0, 2])
    await service._checkpointed()  # anything left queued

    restored = restore(written[2])
    assert restored.checkpoint == len(first) + len(second) + len(third)
    keys = {events[0].key for events in (first, second, third)}
    assert set(restored.states) == keys


async def test_waiting_for_the_checkpoints_waits_for_one_queued_as_the_last_ended() -> None:
    """A fetch decided as the checkpoint writer ends starts the next writer: a wait for the
    first must go on to it, or a partition is let go with that snapshot unwritten."""
    service = DeciderService(kafka=KafkaSettings())
    partition = PartitionDecider(Restored(), committed=0)
    service._partitions[2] = partition
    written: list[int] = []

    async def write(number: int, records: list[tuple[str, SnapshotRecord | None]]) -> None:
        await asyncio.sleep(0)  # a write takes a broker round trip
        checkpoint = records[-1][1]
        assert checkpoint is not None
        written.append(checkpoint.offset)

    def queue_snapshot_at(offset: int) -> None:
        service._queue_checkpoint({}, [(2, service._take_snapshot(2, partition, offset))])

    service._write_snapshot = write  # type: ignore[method-assign]
    queue_snapshot_at(10)
    first = service._checkpoint
    assert first is not None
    first.add_done_callback(lambda _: queue_snapshot_at(20))  # before the wait wakes up

    await service._checkpointed()

    assert written == [10, 20]


class _Outgoing:
    """Decisions produced: the delivery of the last batch is where a revocation comes."""

    def __init__(self, on_flush: Any) -> None:
        self.on_flush = on_flush

    async def prepare(self) -> None:
        return None

    def add(self, key: bytes, value: bytes) -> bool:
        return False

    async def send_full(self) -> list[Any]:
        return []

    async def flush(self) -> list[Any]:
        await self.on_flush()
        return []


class _Consumer:
    def __init__(self) -> None:
        self.commits: list[dict[TopicPartition, int]] = []

    async def commit(self, offsets: dict[TopicPartition, int]) -> None:
        self.commits.append(dict(offsets))


async def test_a_partition_revoked_while_its_fetch_is_delivered_is_left_out_of_the_commit() -> None:
    """A commit naming a partition no longer assigned fails whole: the partitions still
    owned would not be committed either."""
    service = DeciderService(kafka=KafkaSettings())
    kept, revoked = (
        PartitionDecider(Restored(), committed=0),
        PartitionDecider(Restored(), committed=0),
    )
    service._partitions.update({0: kept, 2: revoked})
    service._positions.update({0: 0, 2: 0})
    consumer = _Consumer()
    service._consumer = consumer
    service._outgoing = _Outgoing(lambda: service._release([2]))  # type: ignore[assignment]
    snapshotted: list[int] = []

    async def write(number: int, records: list[tuple[str, SnapshotRecord | None]]) -> None:
        snapshotted.append(number)

    service._write_snapshot = write  # type: ignore[method-assign]
    observations = {0: tensorflow_restart_task(), 2: mpi_exit_code_restart()}
    fetch = [
        (
            TopicPartition("lavalog.observed", number),
            partition,
            _messages(number, observations[number]),
        )
        for number, partition in ((0, kept), (2, revoked))
    ]

    await service._decide_batches(fetch)
    await service._checkpointed()

    assert consumer.commits == [{TopicPartition("lavalog.observed", 0): len(observations[0])}]
    assert service._positions == {0: len(observations[0])}
    assert snapshotted == [0]


def _messages(partition: int, observations: list[Any]) -> list[ConsumerRecord[bytes, bytes]]:
    return [
        ConsumerRecord(
            topic="lavalog.observed",
            partition=partition,
            offset=offset,
            timestamp=0,
            timestamp_type=0,
            key=observation.key.encode(),
            value=encode(observation),
            checksum=None,
            serialized_key_size=0,
            serialized_value_size=0,
            headers=(),
        )
        for offset, observation in enumerate(observations)
    ]
