"""`DeciderService`: a consumer group member running the decider over `lavalog.observed`.

For each partition it owns: restore job states from `lavalog.state`, replay from the
snapshot's checkpoint, then decide each observation, produce its decisions to
`lavalog.decisions` (a fetch's worth in one batch per partition) and only then commit
the input offset (at-least-once: a crash re-decides, and decision ids are deterministic,
so consumers can drop duplicates).
Policy timeouts are durable: a due timer is published as a TimerFired observation and
decided like any other fact. A message that cannot be decoded or decided goes to
`lavalog.deadletter` and the partition goes on. A partition's observations are decided
one after the other from where it was resumed: one handed out again is not decided
twice, and a fetch that skipped some is sent back to them (`_in_order`). Observations
this process's watchers delivered are decided as soon as they are, in the same order,
and so are the timers it fires (`local_delivery`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable
from typing import Any

import structlog
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, ConsumerRebalanceListener, TopicPartition
from aiokafka.errors import KafkaError

from lavalog.controller.decider.core.due_timers import DueTimer, TimerQueue
from lavalog.controller.decider.core.partition import PartitionDecider
from lavalog.controller.decider.core.snapshots import SnapshotRecord, encode_record, restore
from lavalog.controller.decider.core.volcano_metrics import VolcanoMetrics
from lavalog.controller.decision_logs import decision_fields
from lavalog.controller.kafka import KafkaSettings, create_consumer, create_producer, topic_name
from lavalog.controller.kafka.batches import PartitionBatches
from lavalog.controller.kafka.local_delivery import Arrivals, LocalDelivery, fetch_wait_seconds
from lavalog.controller.kafka.reading import keyed, read_to_end
from lavalog.controller.logs import writes
from lavalog.events import topics
from lavalog.events.codec import decode_observation, encode
from lavalog.events.deadletter import DeadLetter, encode_dead_letter
from lavalog.events.decisions import TimerScheduled
from lavalog.events.observations import TimerFired

log = structlog.get_logger("lavalog.decider")

GROUP_ID = "lavalog-decider"
#: a partition's snapshot: its number and the records to write (`PartitionDecider.snapshot`)
PartitionSnapshot = tuple[int, list[tuple[str, SnapshotRecord | None]]]
#: the least time between two commits (and the snapshots written with them)
CHECKPOINT_SECONDS = 0.2


class DeciderService:
    """Run with `await service.run()`; cancel to stop (it snapshots what it owns first)."""

    def __init__(
        self,
        *,
        kafka: KafkaSettings,
        group_id: str = GROUP_ID,
        snapshot_every: int = 5_000,
        snapshot_interval: float = 10.0,
        max_batch: int = 2_000,
        local: LocalDelivery | None = None,
    ) -> None:
        """`local`: where this process's producers hand over what they delivered (its
        watchers' observations; this service's decisions, to its actuator)."""
        self.kafka = kafka
        self._local = local
        self.group_id = group_id
        self.snapshot_every = snapshot_every
        self.snapshot_interval = snapshot_interval
        self.max_batch = max_batch
        self._observed = topic_name(kafka, topics.OBSERVED)
        self._decisions = topic_name(kafka, topics.DECISIONS)
        self._state = topic_name(kafka, topics.STATE)
        self._deadletter = topic_name(kafka, topics.DEADLETTER)
        self._partitions: dict[int, PartitionDecider] = {}
        self._positions: dict[int, int] = {}
        self._feed = (
            None
            if local is None
            else local.subscribe(self._observed, self._partitions.__contains__)
        )
        self._snapshot_at: dict[int, float] = {}
        self._timers = TimerQueue()
        self._timers_changed = asyncio.Event()
        self._consumer: AIOKafkaConsumer | None = None
        self._producer: AIOKafkaProducer | None = None
        self._arrivals: Arrivals | None = None
        self._outgoing: PartitionBatches | None = None
        #: writing the commits and snapshots of the fetches decided (`_queue_checkpoint`)
        self._checkpoint: asyncio.Task[None] | None = None
        self._pending_commit: dict[TopicPartition, int] = {}
        self._checkpointed_at = 0.0
        #: a handover or the stop waits for the checkpoints queued: they go at once
        self._checkpoint_awaited = asyncio.Event()
        self._pending_snapshots: list[PartitionSnapshot] = []
        self.ready = False
        #: `delivered_here`: observations decided without a fetch (`local_delivery`)
        self.counters = {
            "observations": 0,
            "decisions": 0,
            "deadletters": 0,
            "timers_fired": 0,
            "delivered_here": 0,
        }
        #: Volcano's job-controller metrics, served beside lavalog's on `/metrics`
        self.volcano_metrics = VolcanoMetrics()

    def gauges(self) -> dict[str, float]:
        """On /metrics as `lavalog_decider_<name>`: how long its fetches wait on the broker
        now (longer while its watchers hand it every fact: `FetchPace`)."""
        return {"fetch_wait_seconds": fetch_wait_seconds(self._arrivals, self.kafka)}

    @property
    def assigned(self) -> list[int]:
        return sorted(self._partitions)

    async def run(self) -> None:
        producer = create_producer(self.kafka)
        consumer = create_consumer(self.kafka, group_id=self.group_id)
        self._producer, self._consumer = producer, consumer
        self._outgoing = PartitionBatches(producer, self._decisions, local=self._local)
        await producer.start()
        try:
            await consumer.start()
            consumer.subscribe([self._observed], listener=_Rebalance(self))
            timers = asyncio.create_task(self._fire_timers(), name="decider-timers")
            try:
                await self._consume(consumer)
            finally:
                timers.cancel()
                await asyncio.gather(timers, return_exceptions=True)
                await self._release(list(self._partitions))
                await consumer.stop()
        finally:
            self.ready = False
            await producer.stop()

    async def _consume(self, consumer: AIOKafkaConsumer) -> None:
        arrivals = self._arrivals = Arrivals(
            consumer,
            self._feed,
            waits=self.kafka.fetch_waits,
            timeout_ms=200,
            max_records=self.max_batch,
        )
        try:
            while True:
                batches = await arrivals.next()
                self.ready = True
                owned = [
                    (tp, self._partitions[tp.partition], in_order)
                    for tp, messages in batches.items()
                    if tp.partition in self._partitions
                    and (in_order := self._in_order(consumer, tp, messages))
                ]
                if owned:
                    await self._decide_batches(owned)
                delivered_here = self._delivered_here()
                if delivered_here:
                    self.counters["delivered_here"] += sum(len(r) for _, _, r in delivered_here)
                    await self._decide_batches(delivered_here)
        finally:
            await arrivals.close()

    def _delivered_here(self) -> list[tuple[TopicPartition, PartitionDecider, list[Any]]]:
        """The observations delivered in this process that come next in their partitions."""
        if self._feed is None:
            return []
        return [
            (TopicPartition(self._observed, number), self._partitions[number], records)
            for number in self._feed.partitions()
            if number in self._partitions
            and (records := self._feed.take(number, self._positions[number]))
        ]

    def _in_order(
        self, consumer: AIOKafkaConsumer, tp: TopicPartition, messages: list[Any]
    ) -> list[Any]:
        """The messages from the partition's next offset on. Those before it are decided
        already (handed out again); a first one past it means the fetch skipped
        observations, which the states would then lack: the consumer is sent back."""
        expected = self._positions[tp.partition]
        fresh = [message for message in messages if message.offset >= expected]
        if fresh and fresh[0].offset > expected:
            log.warning(
                "observations skipped by the fetch; fetching them again",
                partition=tp.partition,
                expected=expected,
                offset=fresh[0].offset,
            )
            consumer.seek(tp, expected)
            return []
        return fresh

    async def _decide_batches(
        self, batches: list[tuple[TopicPartition, PartitionDecider, list[Any]]]
    ) -> None:
        """Decide what one fetch brought, every partition's decisions produced together
        (one wait for their delivery, one commit, not one each per partition)."""
        outgoing = self._require_outgoing()
        deliveries: list[Awaitable[Any]] = []
        for _, partition, messages in batches:
            deliveries += await self._decide_messages(partition, messages, outgoing)
        deliveries += await outgoing.flush()
        await asyncio.gather(*deliveries)
        # A partition revoked while its decisions were delivered is its next owner's now:
        # it replays them from the last checkpoint. Nothing of it is queued: a commit
        # naming a partition no longer assigned would fail, the other partitions' offsets
        # with it, and its next owner may be reading its snapshots already. (What was
        # queued before is written before it is let go: `_release`.)
        batches = [
            batch for batch in batches if self._partitions.get(batch[0].partition) is batch[1]
        ]
        offsets = {tp: messages[-1].offset + 1 for tp, _, messages in batches}
        for tp, next_offset in offsets.items():
            self._positions[tp.partition] = next_offset
        # Not while rebuilding below the group's commit: that would move it back, and the
        # next owner (if the partition goes mid-rebuild) would decide it all again.
        ahead = {
            tp: offsets[tp] for tp, partition, _ in batches if offsets[tp] > partition.committed
        }
        # Taken now, while the states hold exactly what was delivered (the next fetch
        # changes them); written once the commit is made, as before.
        snapshots = [
            (tp.partition, self._take_snapshot(tp.partition, partition, offsets[tp]))
            for tp, partition, _ in batches
            if partition.dirty >= self.snapshot_every
            or time.monotonic() - self._snapshot_at.get(tp.partition, 0.0) >= self.snapshot_interval
        ]
        self._queue_checkpoint(ahead, snapshots)

    def _queue_checkpoint(
        self,
        ahead: dict[TopicPartition, int],
        snapshots: list[PartitionSnapshot],
    ) -> None:
        """Have the commit and snapshots written after those queued before, by one writer:
        commits stay in order, and a fetch decided while one is written joins the next
        instead of waiting for it (with observations taken one by one as they are
        delivered here, each would otherwise wait for the last one's round trips). A
        failure of the last one is raised here."""
        writer = self._checkpoint
        if writer is not None and writer.done():
            self._checkpoint = None
            writer.result()
        self._pending_commit.update(ahead)  # a later offset of a partition replaces its earlier
        self._pending_snapshots += snapshots
        if self._checkpoint is None:
            self._checkpoint = asyncio.create_task(
                self._write_checkpoints(), name="decider-checkpoint"
            )

    async def _write_checkpoints(self) -> None:
        while self._pending_commit or self._pending_snapshots:
            await self._until_checkpoint_due()
            ahead, self._pending_commit = self._pending_commit, {}
            snapshots, self._pending_snapshots = self._pending_snapshots, []
            await self._commit_then_snapshot(ahead, snapshots)
            self._checkpointed_at = time.monotonic()

    async def _until_checkpoint_due(self) -> None:
        """At most one checkpoint each `CHECKPOINT_SECONDS`, unless one is awaited (a
        handover, the stop): a crash decides that much again, whose decisions have the
        same ids, and a commit each time a fetch or one delivered observation is decided
        would cost a broker round trip each."""
        wait = self._checkpointed_at + CHECKPOINT_SECONDS - time.monotonic()
        if wait > 0 and not self._checkpoint_awaited.is_set():
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(wait):
                    await self._checkpoint_awaited.wait()

    async def _checkpointed(self) -> None:
        """Until every checkpoint queued is written, those queued meanwhile too (a failure
        raised here). Shielded: one cut short would leave a snapshot's records unwritten
        that are no longer dirty."""
        while (checkpoint := self._checkpoint) is not None:
            self._checkpoint_awaited.set()
            try:
                await asyncio.shield(checkpoint)
            finally:
                # a writer that finished as a fetch queued more started the next one
                if checkpoint.done() and self._checkpoint is checkpoint:
                    self._checkpoint = None
                    self._checkpoint_awaited.clear()

    async def _commit_then_snapshot(
        self,
        ahead: dict[TopicPartition, int],
        snapshots: list[PartitionSnapshot],
    ) -> None:
        """Commit a fetch whose decisions are delivered, then write the snapshots taken
        after it, off the path of the next fetch: the observations it brings are decided
        while the broker answers, instead of after two more round trips (and a snapshot's
        records) each time."""
        try:
            if ahead:
                await self._require_consumer().commit(ahead)
        except KafkaError as exc:
            # The group rebalanced meanwhile (a long broker pause, a session expired): the
            # partitions' next owner replays from the last commit, whose decisions are
            # the same ones with the same ids. Dying here would stop the whole process.
            log.warning("offset commit failed", error=str(exc))
        for number, records in snapshots:
            await self._write_snapshot(number, records)

    async def _decide_messages(
        self, partition: PartitionDecider, messages: list[Any], outgoing: PartitionBatches
    ) -> list[Awaitable[Any]]:
        """Decide each message and add its decisions to `outgoing`; the deliveries of
        batches sent meanwhile and of dead letters, to await. (On the path of every
        observation: nothing here waits unless a batch filled up or a message is poison.)"""
        deliveries: list[Awaitable[Any]] = []
        logged = writes(logging.INFO)  # else no line's fields are worth making
        decided = 0
        await outgoing.prepare()
        for message in messages:
            try:
                observation = decode_observation(message.value)
                decisions = partition.apply(message.offset, observation)
            except Exception as exc:  # a poison message must not stall its partition
                deliveries.append(await self._dead_letter(message, exc))
                continue
            for decision in decisions:
                if logged:
                    log.info("decided", **decision_fields(decision))
                if outgoing.add(decision.key.encode(), encode(decision)):
                    deliveries += await outgoing.send_full()
                if type(decision) is TimerScheduled:
                    timer = DueTimer(
                        decision.fire_at, decision.key, decision.job_uid, decision.timer_id
                    )
                    self._add_timer(timer)
            decided += len(decisions)
            if message.offset >= partition.committed:  # decided now, not rebuilt
                before, after = partition.stepped
                self.volcano_metrics.record(before, observation, decisions, after)
        for timer in partition.rebuilt_timers():
            self._add_timer(timer)
        self.counters["observations"] += len(messages)
        self.counters["decisions"] += decided
        return deliveries

    async def _dead_letter(self, message: Any, error: Exception) -> Awaitable[Any]:
        self.counters["deadletters"] += 1
        log.warning(
            "poison message sent to the dead letter topic",
            job=message.key.decode(errors="replace") if message.key else None,
            partition=message.partition,
            offset=message.offset,
            error=str(error),
        )
        letter = DeadLetter(
            topic=message.topic,
            partition=message.partition,
            offset=message.offset,
            consumer="decider",
            error=f"{type(error).__name__}: {error}",
            value=bytes(message.value or b"").decode(errors="replace"),
            key=message.key.decode(errors="replace") if message.key else None,
        )
        future: Awaitable[Any] = await self._require_producer().send(
            self._deadletter, encode_dead_letter(letter), key=message.key
        )
        return future

    async def _snapshot(self, number: int, partition: PartitionDecider, next_offset: int) -> None:
        await self._write_snapshot(number, self._take_snapshot(number, partition, next_offset))

    def _take_snapshot(
        self, number: int, partition: PartitionDecider, next_offset: int
    ) -> list[tuple[str, SnapshotRecord | None]]:
        self._snapshot_at[number] = time.monotonic()
        return partition.snapshot(next_offset)

    async def _write_snapshot(
        self, number: int, records: list[tuple[str, SnapshotRecord | None]]
    ) -> None:
        """The job records, then (once they are all delivered) the checkpoint."""
        producer = self._require_producer()
        deliveries = [
            await producer.send(
                self._state,
                None if record is None else encode_record(record),
                key=key.encode(),
                partition=number,
            )
            for key, record in records[:-1]
        ]
        await asyncio.gather(*deliveries)
        checkpoint_key, checkpoint = records[-1]
        assert checkpoint is not None
        await producer.send_and_wait(
            self._state, encode_record(checkpoint), key=checkpoint_key.encode(), partition=number
        )

    async def _adopt(self, assigned: list[int]) -> None:
        """Restore the states of newly assigned partitions and seek to their checkpoints."""
        consumer = self._require_consumer()
        adopted = [number for number in assigned if number not in self._partitions]
        records = await self._read_state_partitions(adopted)
        #: snapshots ahead of the group's commit, which they stand for (see below)
        behind: dict[TopicPartition, int] = {}
        for number in adopted:
            restored = restore(records[number])
            tp = TopicPartition(self._observed, number)
            committed = await consumer.committed(tp) or 0
            if restored.checkpoint > committed:
                behind[tp] = restored.checkpoint
            partition = PartitionDecider(restored, committed=committed)
            consumer.seek(tp, restored.checkpoint)
            self._partitions[number] = partition
            self._positions[number] = restored.checkpoint
            self._snapshot_at[number] = time.monotonic()
            for timer in partition.timers():
                self._add_timer(timer)
            log.info(
                "partition adopted",
                partition=number,
                jobs=len(restored.states),
                replay_from=restored.checkpoint,
                committed=committed,
            )
            if restored.skipped:
                log.warning(
                    "records on lavalog.state that are not snapshots were left out",
                    partition=number,
                    skipped=restored.skipped,
                )
        # A snapshot is written once its fetch's decisions are delivered, even if the
        # commit after them failed: commit it now, else the group's commit stays behind
        # (a lag nothing would ever decide) until new observations come.
        if behind:
            try:
                await consumer.commit(behind)
            except KafkaError as exc:  # the next fetch's commit covers it
                log.warning("offset commit failed", error=str(exc))

    async def _release(self, revoked: list[int]) -> None:
        """Snapshot what is handed over, so that its next owner replays little.

        Not when the states are ahead of the position: a revocation can come while a
        fetch's decisions are still being delivered, and a snapshot of states that
        already hold that fetch, checkpointed at the position before it, would make the
        next owner apply the fetch a second time (in the churn run, a pod's failure
        counted twice: a RestartTask decided again and the job Failed one retry early).
        The next owner replays from the last snapshot instead.

        Each partition waits for the snapshots queued before it is let go: while an
        earlier one's snapshot is written, a fetch of it may still be decided and its
        snapshot queued, which clears its dirty jobs. Let go first, that snapshot would
        be dropped, and this one's checkpoint would stand for jobs it never wrote."""
        for number in revoked:
            await self._checkpointed()  # its last fetch's snapshot lands before this one
            partition = self._partitions.pop(number, None)
            if partition is None:
                continue
            position = self._positions.pop(number, 0)
            in_flight = partition.applied_to - position
            if partition.dirty and not in_flight:
                await self._snapshot(number, partition, position)
            self._timers.drop_keys(set(partition.states))
            log.info("partition released", partition=number, position=position, in_flight=in_flight)

    async def _read_state_partitions(
        self, numbers: list[int]
    ) -> dict[int, list[tuple[str, bytes | None]]]:
        """Every record of these `lavalog.state` partitions, from their start to their end,
        read by one consumer (so that adopting many partitions costs one fetch wait)."""
        if not numbers:
            return {}
        reader = create_consumer(self.kafka, group_id=None)
        await reader.start()
        try:
            found = await read_to_end(
                reader, {TopicPartition(self._state, number): 0 for number in numbers}
            )
        finally:
            await reader.stop()
        return {tp.partition: list(keyed(records)) for tp, records in found.items()}

    def _add_timer(self, timer: DueTimer) -> None:
        self._timers.add(timer)
        self._timers_changed.set()

    async def _fire_timers(self) -> None:
        """Publish TimerFired for due timers; the event time is the time it was due."""
        producer = self._require_producer()
        while True:
            next_at = self._timers.next_fire_at()
            wait = 1.0 if next_at is None else max(0.0, min(1.0, next_at - time.time()))
            self._timers_changed.clear()
            # asyncio.timeout, not wait_for: on Python 3.11 wait_for returns the awaited
            # result when it is cancelled in the same turn, and the stop would be lost
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(wait):
                    await self._timers_changed.wait()
            for timer in self._timers.pop_due(time.time()):
                fired = TimerFired(
                    id=f"{timer.timer_id}/fired",
                    key=timer.key,
                    job_uid=timer.job_uid,
                    time=timer.fire_at,
                    timer_id=timer.timer_id,
                )
                key, value = timer.key.encode(), encode(fired)
                sent = await producer.send_and_wait(self._observed, value, key=key)
                if self._local is not None:
                    self._local.delivered(
                        self._observed, sent.partition, sent.offset, ((key, value),)
                    )
                self.counters["timers_fired"] += 1
                log.info("timer fired", job=timer.key, timer=timer.timer_id)

    def _require_outgoing(self) -> PartitionBatches:
        assert self._outgoing is not None, "the service is not running"
        return self._outgoing

    def _require_producer(self) -> AIOKafkaProducer:
        assert self._producer is not None, "the service is not running"
        return self._producer

    def lag(self) -> dict[int, int]:
        """Per owned partition, the facts in `lavalog.observed` not yet decided (`/metrics`)."""
        if self._consumer is None:
            return {}
        behind = {}
        for number, position in self._positions.items():
            highwater = self._consumer.highwater(TopicPartition(self._observed, number))
            if highwater is not None:
                behind[number] = max(0, highwater - position)
        return behind

    def _require_consumer(self) -> AIOKafkaConsumer:
        assert self._consumer is not None, "the service is not running"
        return self._consumer


class _Rebalance(ConsumerRebalanceListener):  # type: ignore[misc]
    """Hand partitions over cleanly: snapshot on revoke, restore on assign."""

    def __init__(self, service: DeciderService) -> None:
        self.service = service

    async def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        await self.service._release([tp.partition for tp in revoked])

    async def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        await self.service._adopt(sorted(tp.partition for tp in assigned))
