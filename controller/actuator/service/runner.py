"""The actuator service: `lavalog.decisions` in, Kubernetes API writes out.

A consumer group member: each decision goes to its job's lane (`queues`), so a job's
decisions are carried out in log order and different jobs in parallel; the offset
committed per partition is the first one not yet carried out, with the later ones already
carried out recorded beside it (`offsets`, `progress_log`): a crash repeats only the decisions
that were in flight, never skips one, and idempotent writes (`apply`) make the
repetition harmless. One job's slow decision holds back nobody else's progress.
Before a partition moves to another member (rebalance) or the service stops, the
decisions under way are finished and committed, so that two members never work on one
job at once; those still waiting in its lanes are left to the next owner. Decisions
this process's decider delivered are received as soon as they are, in the same order
(`local_delivery`).
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import structlog
from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener, TopicPartition
from aiokafka.errors import KafkaError

from lavalog.controller.actuator.core.held_jobs import phase_of
from lavalog.controller.actuator.core.job_events import REPORTED
from lavalog.controller.actuator.core.lane_order import (
    next_up,
    replaced_by_last,
    replacement,
    superseded,
)
from lavalog.controller.actuator.core.lru import Lru
from lavalog.controller.actuator.core.offsets import OffsetTracker, Progress
from lavalog.controller.actuator.core.priority import Priority, priority_of
from lavalog.controller.actuator.core.status_hold import (
    HOLD_SECONDS,
    INITIATED_HOLD_SECONDS,
    StatusHold,
)
from lavalog.controller.actuator.service.apply import Applier
from lavalog.controller.actuator.service.client import Api
from lavalog.controller.actuator.service.counters import Counters
from lavalog.controller.actuator.service.job_informer import JobInformer
from lavalog.controller.actuator.service.progress_log import ProgressLog
from lavalog.controller.actuator.service.queues import KeyedQueues, step_aside
from lavalog.controller.actuator.service.ratelimit import RateLimiter, TokenBucket, prioritized
from lavalog.controller.actuator.service.refusals import RefusalPublisher
from lavalog.controller.actuator.service.timing import Timing, log_fields, timing
from lavalog.controller.decision_logs import carried_out, decision_fields, lag
from lavalog.controller.kafka import KafkaSettings, create_consumer, topic_name
from lavalog.controller.kafka.local_delivery import Arrivals, LocalDelivery, fetch_wait_seconds
from lavalog.controller.kube import Kube
from lavalog.events.codec import DecodeError, decode_decision
from lavalog.events.decisions import AnyDecision, StatusWrite
from lavalog.events.observations import MAX_REQUEUE_NUM
from lavalog.events.topics import DECISIONS

#: decisions received and not yet carried out, beyond which fetching pauses: enough that
#: a burst's pod creates, decided after its PodGroups were admitted, are fetched (and go
#: first, `core.priority`) while the status writes and Events before them still wait
MAX_IN_FLIGHT = 20_000
GROUP_ID = "lavalog-actuator"
#: how long a rebalance or a stop waits for the decisions under way before abandoning them
DRAIN_SECONDS = 30.0
#: how long the final commit and leaving the group may take on the way out
STOP_SECONDS = 10.0
#: decisions remembered as carried out (about 100 bytes each)
REMEMBERED = 100_000
#: how long a stop waits for the Events queued to be written
EVENTS_SECONDS = 5.0
#: how long a takeover waits for the Jobs to be listed before its decisions are carried out
LIST_SECONDS = 5.0
#: decisions left waiting at a handover whose first receipt is remembered (`timing`)
LEFT_REMEMBERED = 100_000
_POLL_MS = 100
#: seconds between offset commits (and progress records) while decisions flow: each is
#: two round trips to the broker and the done offsets encoded, and a restart carries out
#: again at most this much, which every decision allows (Kafka's auto-commit waits 5 s)
COMMIT_SECONDS = 1.0
_log = structlog.get_logger("lavalog.actuator")


@dataclass(frozen=True, slots=True)
class _Item:
    partition: TopicPartition
    offset: int
    decision: AnyDecision
    #: the message's digest: a copy of it is the same decision (`_same`)
    digest: str
    timing: Timing


class ActuatorService:
    """`await service.run()` until cancelled; `ready` and `counters` for health and metrics."""

    def __init__(
        self,
        *,
        kube: Kube,
        kafka: KafkaSettings,
        group_id: str = GROUP_ID,
        qps: float = 50,
        burst: int = 100,
        concurrency: int = 32,
        namespace: str | None = None,
        max_requeues: int = MAX_REQUEUE_NUM,
        phase_events: bool = False,
        status_hold: float = HOLD_SECONDS,
        initiated_hold: float = INITIATED_HOLD_SECONDS,
        local: LocalDelivery | None = None,
    ) -> None:
        """`local`: where this process's decider hands over the decisions it delivered."""
        self.counters = Counters()
        #: the namespace the controller watches (None: all), whose Jobs a takeover lists
        self._namespace = namespace
        self._informer: asyncio.Task[None] | None = None
        limiter = self._limiter = RateLimiter(
            TokenBucket(qps, burst), concurrency, counters=self.counters
        )
        # a call waiting to be retried leaves its lane's turn to another job meanwhile
        self._api = Api(kube, limiter, self.counters, sleep=step_aside)
        self._refusals = RefusalPublisher(kafka, local=local)
        self._applier = Applier(
            self._api,
            self.counters,
            on_refused=self._refusals.publish,
            max_requeues=max_requeues,
            phase_events=phase_events,
        )
        self._events = self._applier.events
        self._kafka = kafka
        self._group_id = group_id
        self._offsets: OffsetTracker[TopicPartition] = OffsetTracker()
        #: a Pending status write alone in its lane waits a moment for its job's next
        #: decision, which often replaces it, and so does the initiated status while
        #: the actuator is behind (`core.status_hold`)
        self._hold = StatusHold(status_hold, initiated=initiated_hold)
        self._lanes: KeyedQueues[_Item] = KeyedQueues(
            self._carry_out,
            turns=concurrency,
            pick=lambda items: next_up([item.decision for item in items]),
            urgent=lambda item: priority_of(item.decision) is Priority.PODS,
            hold=self._held_for,
            supersedes=self._superseded_by_last,
        )
        self._ready = False
        #: the decisions carried out here (`_same`), the latest `REMEMBERED`: the decider
        #: may produce a decision again (at-least-once), and doing it twice costs API calls
        self._done: Lru[str, bool] = Lru(REMEMBERED)
        #: decisions whose Events are being written -> the offsets of the copies received
        #: meanwhile (on the same partition: a decision's partition is its job's)
        self._events_waiting: dict[str, list[int]] = {}
        #: partitions whose progress is known: aiokafka may hand out a new partition's
        #: messages while `_take_over` still reads it, and those must wait for it
        self._taken_over: set[TopicPartition] = set()
        #: decisions left waiting at a handover -> when they were first received here
        self._left: Lru[str, float] = Lru(LEFT_REMEMBERED)
        #: status writes carried out in the place of an earlier one (`_write_status`),
        #: done once their lane reaches them
        self._written_ahead: set[tuple[TopicPartition, int]] = set()
        self._topic = topic_name(kafka, DECISIONS)
        #: the decisions' consumer, while the service runs
        self.consumer: AIOKafkaConsumer | None = None
        #: fetching paused while too much is in flight (`_throttle`)
        self._throttled = False
        self._arrivals: Arrivals | None = None
        self._feed = (
            None
            if local is None
            else local.subscribe(
                self._topic, lambda number: TopicPartition(self._topic, number) in self._taken_over
            )
        )

    @property
    def ready(self) -> bool:
        """Joined the consumer group (with its share of the partitions, maybe none)."""
        return self._ready

    @property
    def in_flight(self) -> int:
        """Decisions received and not yet carried out."""
        return self._offsets.in_flight()

    def api_calls(self) -> dict[tuple[str, str, str], int]:
        """API requests sent, by (verb, resource, purpose): `/metrics`."""
        return {(c.verb, c.resource, c.purpose.value): n for c, n in self._api.calls.items()}

    def gauges(self) -> dict[str, float]:
        """How much is waiting, for `/metrics`: jobs with decisions queued (`lanes`),
        decisions queued in them (`queued`), the longest lane (`deepest_lane`), decisions
        received and not carried out (`in_flight`), decisions whose Events are not
        written yet (`events_waiting`); and how long its fetches wait on the broker now
        (longer while its decider hands it every decision: `FetchPace`)."""
        return {
            "fetch_wait_seconds": fetch_wait_seconds(self._arrivals, self._kafka),
            "lanes": len(self._lanes),
            "queued": self._lanes.queued(),
            "deepest_lane": self._lanes.deepest(),
            "in_flight": self.in_flight,
            "events_waiting": self._events.waiting(),
        }

    async def run(self) -> None:
        consumer = self.consumer = create_consumer(self._kafka, group_id=self._group_id)
        progress_log = ProgressLog(self._kafka, self._group_id)
        consumer.subscribe(
            [self._topic],
            listener=_Handover(
                functools.partial(self._hand_over, consumer, progress_log),
                functools.partial(self._take_over, consumer, progress_log),
            ),
        )
        await progress_log.start()
        try:
            await self._refusals.start()
            await consumer.start()
        except BaseException:
            await self._refusals.stop()
            await progress_log.stop()
            raise
        writer = asyncio.create_task(self._events.run(), name="actuator events")
        arrivals = self._arrivals = Arrivals(
            consumer, self._feed, waits=self._kafka.fetch_waits, timeout_ms=_POLL_MS
        )
        try:
            next_commit = time.monotonic()
            while True:
                self._throttle(consumer)
                batches = await arrivals.next()
                for partition, messages in batches.items():
                    self._receive_all(consumer, partition, messages)
                self._receive_delivered_here()
                if time.monotonic() >= next_commit:
                    await self._commit(consumer, progress_log)
                    next_commit = time.monotonic() + COMMIT_SECONDS
        finally:
            await arrivals.close()
            self._ready = False
            if self._informer is not None:
                self._informer.cancel()
            self._lanes.drop_waiting()
            await self._lanes.drain(DRAIN_SECONDS)
            await self._stop_writing(writer)
            try:  # bounded: a group still forming must not hold the process on its way out
                async with asyncio.timeout(STOP_SECONDS):
                    await self._commit(consumer, progress_log)
                    await consumer.stop()
            except TimeoutError:
                _log.warning(
                    "stopped without a final commit; the next owner carries the rest out again"
                )
            await self._refusals.stop()
            await progress_log.stop()

    def _throttle(self, consumer: AIOKafkaConsumer) -> None:
        """Pause fetching while too much is in flight (still polling, so the group sees us);
        resume once it is not, what this paused only."""
        if self._offsets.in_flight() >= MAX_IN_FLIGHT:
            consumer.pause(*consumer.assignment())
            self._throttled = True
        elif self._throttled:
            consumer.resume(*consumer.paused())
            self._throttled = False

    def _receive_all(
        self, consumer: AIOKafkaConsumer, partition: TopicPartition, messages: list[Any]
    ) -> None:
        if partition not in self._taken_over:
            # fetched before its progress was read (a slow progress log): carrying these out
            # now would repeat decisions done before the last commit; fetch them again
            consumer.seek(partition, messages[0].offset)
            return
        for message in messages:
            missing = self._offsets.missing_before(partition, message.offset)
            if missing is not None:
                # Messages were skipped (the consumer fetched from another commit than
                # the one this member resumed from): fetch them, or a commit would pass
                # decisions nobody carried out.
                _log.warning(
                    "decisions skipped by the fetch; fetching them again",
                    partition=partition.partition,
                    expected=missing,
                    offset=message.offset,
                )
                consumer.seek(partition, missing)
                return
            self._receive(partition, message.offset, message.value)

    def _receive_delivered_here(self) -> None:
        """The decisions delivered in this process that come next in their partitions
        (not while too much is in flight: they wait, or the fetch brings them)."""
        if self._feed is None or self._offsets.in_flight() >= MAX_IN_FLIGHT:
            return
        for number in self._feed.partitions():
            partition = TopicPartition(self._topic, number)
            expected = self._offsets.expected(partition)
            if partition not in self._taken_over or expected is None:
                continue
            for record in self._feed.take(number, expected):
                self.counters.delivered_here += 1
                self._receive(partition, record.offset, record.value)

    def _receive(self, partition: TopicPartition, offset: int, value: bytes | None) -> None:
        if not self._offsets.received(partition, offset):
            return  # carried out before the last commit, or handed out before
        try:
            decision = decode_decision(value or b"")
        except DecodeError as exc:
            # Not a decision: nothing to carry out, and the partition goes on.
            self.counters.failed += 1
            _log.error(
                "undecodable decision", partition=partition.partition, offset=offset, error=str(exc)
            )
            self._offsets.done(partition, offset)
            return
        digest = _same(value or b"")
        received = Timing(time.time(), self._left.get(digest))
        if digest in self._done:
            self._repeated(partition, offset)
            return
        if type(decision) in REPORTED:  # no lane: an Event waits for nothing, nor holds up
            events = self._applier.reported(decision)
            if not events:  # a phase change without --phase-events: nothing to write
                self.counters.ignored += 1
                self._offsets.done(partition, offset)
                return
            copies = self._events_waiting.get(digest)
            if copies is not None:  # its first copy is still being written
                copies.append(offset)
                return
            self._events_waiting[digest] = []
            done = functools.partial(self._event_done, partition, offset, decision, digest)
            self._events.record(
                events, group=partition, done=done, decision=digest, timing=received
            )
            return
        superseded = self._lanes.put(
            decision.key, partition, _Item(partition, offset, decision, digest, received)
        )
        if superseded is not None:  # left out for this one: done, never carried out
            self.counters.coalesced += 1
            self._offsets.done(superseded.partition, superseded.offset)

    def _event_done(
        self, partition: TopicPartition, offset: int, decision: AnyDecision, digest: str
    ) -> None:
        self.counters.applied += 1
        self._done.put(digest, True)
        for copy in self._events_waiting.pop(digest, ()):
            self._repeated(partition, copy)
        self._offsets.done(partition, offset)
        _log.info(
            carried_out(decision),
            lag=lag(decision),
            **log_fields(decision),
            **decision_fields(decision),
        )

    async def _stop_writing(self, writer: asyncio.Task[None]) -> None:
        """Give the Events queued a moment to be written (those not written are not done:
        the next owner writes them), then stop the writer."""
        try:
            async with asyncio.timeout(EVENTS_SECONDS):
                await self._events.idle()
        except TimeoutError:
            pass
        writer.cancel()
        await asyncio.gather(writer, return_exceptions=True)

    def _held_for(self, items: Sequence[_Item]) -> float:
        """How long a job's lane waits still before its first item (`core.status_hold`);
        not for a write made already in the place of an earlier one."""
        first = items[0]
        if (first.partition, first.offset) in self._written_ahead:
            return 0.0

        # alone in its lane or not is all the hold asks of the items
        decisions = [item.decision for item in items[:2]]
        return self._hold.wait(
            decisions,
            shown=lambda: self._shown(first.decision),
            behind=self._lanes.behind(),
            now=time.monotonic(),
        )

    def _shown(self, decision: AnyDecision) -> str | None:
        """The phase the decision's Job shows on the API server as far as the actuator knows
        ("" when none yet), or None when it does not hold that incarnation."""
        held = self._applier.jobs.get(decision.key, decision.job_uid)
        return None if held is None else phase_of(held)

    def _superseded_by_last(self, items: Sequence[_Item]) -> int | None:
        """The status write in a job's lane that the one just queued replaces
        (`lane_order.replaced_by_last`); not one made already in an earlier one's place,
        which is done only once its lane reaches it."""
        index = replaced_by_last([item.decision for item in items])
        if index is None or (items[index].partition, items[index].offset) in self._written_ahead:
            return None
        return index

    def _replaced(self, item: _Item, later: Sequence[_Item]) -> bool:
        """Whether `item` is a status write a later one in its lane overwrites
        (`lane_order.superseded`), or one the write made already in an earlier one's place
        overwrote: every status write between those two is a link of its chain
        (`lane_order.replacement`), left out, whatever the Job shows since."""
        if not isinstance(item.decision, StatusWrite):
            return False
        if any((queued.partition, queued.offset) in self._written_ahead for queued in later):
            return True
        decisions = [queued.decision for queued in later]
        return superseded(item.decision, decisions, shown=self._shown(item.decision))

    async def _carry_out(self, item: _Item, later: Sequence[_Item]) -> None:
        place = (item.partition, item.offset)
        if place in self._written_ahead:  # written in the place of an earlier status write
            self._written_ahead.discard(place)
        elif item.digest in self._done:  # its first copy was ahead of it in the lane
            self._repeated(item.partition, item.offset)
            return
        elif self._replaced(item, later):
            # Not carried out, so not remembered as carried out: the later write may be a
            # copy of this very message (decided again), which must then be carried out.
            self.counters.coalesced += 1
        else:
            # what waits behind it in its lane waits for it: it goes at their priority too
            # (a kill behind the status write that must come first is not held by it)
            priority = min(priority_of(d.decision) for d in (item, *later))
            if isinstance(item.decision, StatusWrite):
                await self._write_status(item, later, priority)
            else:
                await self._apply(item, priority)
        self._offsets.done(item.partition, item.offset)

    async def _apply(self, item: _Item, priority: Priority) -> None:
        item.timing.start()
        with timing(item.timing):
            await self._applier.apply(item.decision, priority=priority)
        self._done.put(item.digest, True)

    async def _write_status(self, item: _Item, later: Sequence[_Item], priority: Priority) -> None:
        """Wait for the status write's turn of the API budget first, then write the latest
        status of its phase queued by then (`lane_order.replacement`): under a backlog the
        writes of one job's phase, decided while the first waited, cost one call. The
        write made in its place is done once its lane reaches it."""
        item.timing.start()
        with timing(item.timing), prioritized(priority):
            async with self._limiter.reserved():
                index = replacement(
                    item.decision,
                    [queued.decision for queued in later],
                    shown=self._shown(item.decision),
                )
                self._hold.written(item.decision)
                if index is None:
                    await self._apply(item, priority)
                    return
                newest = later[index]
                self.counters.coalesced += 1
                self._written_ahead.add((newest.partition, newest.offset))
                await self._apply(newest, priority)

    def _repeated(self, partition: TopicPartition, offset: int) -> None:
        """A decision the decider produced again (the same message: it decided the same
        observation again after a restart) that this member has carried out already."""
        self.counters.repeated += 1
        self._offsets.done(partition, offset)

    async def _commit(
        self,
        consumer: AIOKafkaConsumer,
        progress_log: ProgressLog,
        partitions: Iterable[TopicPartition] | None = None,
    ) -> None:
        """Record the decisions done past each offset, then commit the offsets."""
        positions = self._offsets.to_commit(
            consumer.assignment() if partitions is None else partitions
        )
        if not positions:
            return
        try:
            await progress_log.record({tp.partition: p for tp, p in positions.items()})
            await consumer.commit({tp: p.offset for tp, p in positions.items()})
        except KafkaError as exc:  # e.g. mid-rebalance: the next commit carries the same positions
            _log.warning("offset commit failed", error=str(exc))
            return
        self._offsets.committed(positions)

    async def _hand_over(
        self, consumer: AIOKafkaConsumer, progress_log: ProgressLog, partitions: set[TopicPartition]
    ) -> None:
        """Finish what is under way of `partitions` and commit, before another member gets
        them; what waits in their lanes is left to that member (not done, not committed)."""
        left = self._lanes.drop_waiting(partitions)
        for item in left:
            self._left.put(item.digest, item.timing.first)
        await self._lanes.drain(DRAIN_SECONDS, partitions)
        for forgotten, received in self._events.forget(partitions):
            self._events_waiting.pop(forgotten, None)
            self._left.put(forgotten, received)
        await self._commit(consumer, progress_log, partitions)
        _log.info(
            "partitions handed over",
            positions={tp.partition: self._offsets.position(tp) for tp in partitions},
            left_waiting=len(left),
        )
        self._offsets.forget(partitions)
        self._taken_over -= partitions
        self._written_ahead = {w for w in self._written_ahead if w[0] not in partitions}
        self._hold.forget()
        if partitions:
            if self._informer is not None:  # what it lists or watches now would be held again
                self._informer.cancel()
            self._applier.forget_jobs()

    async def _take_over(
        self, consumer: AIOKafkaConsumer, progress_log: ProgressLog, partitions: set[TopicPartition]
    ) -> None:
        """Learn which decisions past each committed offset were already carried out (by
        the partition's previous owner in this group, perhaps before a crash); then ready."""
        try:
            recorded = await progress_log.last(tp.partition for tp in partitions)
        except (KafkaError, TimeoutError) as exc:  # not fatal: more is carried out again
            _log.warning("actuator progress not read", error=f"{type(exc).__name__}: {exc}")
            recorded = {}
        for tp in partitions:
            stored = recorded.get(tp.partition)
            if stored is None:
                continue
            committed = await consumer.committed(tp)
            # Everything before either is carried out: the commit, or the progress its
            # owner recorded just before a commit that may have failed.
            start = stored.offset if committed is None else max(committed, stored.offset)
            done = tuple(offset for offset in stored.done if offset >= start)
            self._offsets.resume(tp, Progress(start, done))
        if partitions:
            if self._informer is not None:
                self._informer.cancel()
            informer = JobInformer(self._api, self._applier.jobs, self._namespace)
            self._informer = asyncio.create_task(informer.run(), name="actuator jobs informer")
            # the partitions' decisions wait for the list (a call or two), which saves each
            # job's first decision a read of its own
            try:
                async with asyncio.timeout(LIST_SECONDS):
                    await informer.listed.wait()
            except TimeoutError:
                _log.warning("jobs not listed in time; each is read when needed meanwhile")
        self._taken_over |= partitions
        _log.info(
            "partitions taken over",
            partitions=sorted(tp.partition for tp in partitions),
            skipping={n: len(p.done) for n, p in recorded.items()},
        )
        self._ready = True


def _same(message: bytes) -> str:
    """What tells a copy of a decision: the whole message, not its id alone (a listing of
    the same pods, say, has the same id at another moment and leads to other decisions,
    under the same ids)."""
    return hashlib.blake2b(message, digest_size=16).hexdigest()


class _Handover(ConsumerRebalanceListener):  # type: ignore[misc]
    def __init__(
        self,
        hand_over: Callable[[set[TopicPartition]], Awaitable[None]],
        take_over: Callable[[set[TopicPartition]], Awaitable[None]],
    ) -> None:
        self._hand_over = hand_over
        self._take_over = take_over

    async def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        await self._hand_over(revoked)

    async def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        """Fetching starts from the group's committed offsets; the service is ready."""
        await self._take_over(assigned)
