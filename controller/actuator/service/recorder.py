"""Kubernetes Events, written off the jobs' lanes as client-go's event recorder writes them.

A decision that is only an Event (`job_events.REPORTED`: an action taken, a phase change,
a rejected spec...) never waits in its job's lane, and an Event never holds up a pod
create: `record` correlates it at once (`core.event_correlation`: identical Events
counted into one, similar ones combined, a burst per object) and queues what is left to
write; `WRITERS` writers send the queue in order at the lowest priority of the API budget
(`Priority.EVENTS`), one object's Events one after the other (an Event counted into
another is a patch of it, which must come after its create). client-go's broadcaster
writes with one; at the budget's lowest priority, one call at a time writes a few
Events a second, and a burst of failing jobs (thousands of Events) would wait minutes.
At most `capacity` wait: beyond that a new Event is dropped and counted, as client-go's
broadcaster drops it (an Event is a hint, never the record: the log is). A drop is
logged at once, and then at most one line per `DROPS_LOGGED_EVERY` seconds tells how
many were dropped since the last (`lavalog_actuator_events_dropped_total` counts each):
a line per Event at a thousand a second was the flood that slowed the writers further. A decision
counts as done (`done`) once its Events are written, filtered or dropped, so a crash
before that writes them again; when its partition goes to another member, its Events
not yet written are left to that member.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable, Container, Hashable, Sequence
from dataclasses import dataclass

import structlog

from lavalog.controller.actuator.core import paths
from lavalog.controller.actuator.core.event_correlation import EventCorrelator, Write
from lavalog.controller.actuator.core.priority import Priority
from lavalog.controller.actuator.service.client import Api, Obj
from lavalog.controller.actuator.service.counters import Counters
from lavalog.controller.actuator.service.ratelimit import prioritized
from lavalog.controller.actuator.service.timing import Timing, timing
from lavalog.controller.kube import MERGE_PATCH, KubeError

#: client-go's `maxQueuedEvents`
CAPACITY = 1000
#: Events written at once, of different objects
WRITERS = 8
#: seconds between two log lines about Events dropped
DROPS_LOGGED_EVERY = 10.0
_log = structlog.get_logger("lavalog.actuator")


@dataclass(slots=True)
class _Queued:
    writes: list[Write]
    group: Hashable
    done: Callable[[], None] | None
    #: the decision the Events report ("" when none)
    decision: str
    timing: Timing

    @property
    def about(self) -> str:
        """The object the Events are about (`namespace/name`)."""
        involved = self.writes[0].event["involvedObject"]
        return f"{involved.get('namespace', '')}/{involved['name']}"


class EventRecorder:
    """`record(manifests, group=, done=)`; `await recorder.run()` writes them until cancelled."""

    def __init__(
        self,
        api: Api,
        counters: Counters,
        *,
        capacity: int = CAPACITY,
        writers: int = WRITERS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._api = api
        self._counters = counters
        self._clock = clock
        #: Events dropped since the last line about them, and when that line was logged
        self._dropped_unlogged = 0
        self._drops_logged_at: float | None = None
        self._capacity = capacity
        self._writers = writers
        self._correlator = EventCorrelator()
        self._queue: deque[_Queued] = deque()
        #: set when something in the queue may be written (queued, or its object freed)
        self._queued = asyncio.Event()
        #: object -> the decision whose Events of it are being written
        self._writing: dict[str, _Queued] = {}
        self._written = asyncio.Condition()

    def record(
        self,
        manifests: Sequence[Obj],
        *,
        group: Hashable = None,
        done: Callable[[], None] | None = None,
        decision: str = "",
        timing: Timing | None = None,
    ) -> None:
        """Queue the Events of one decision (`done` is called once they are written;
        `timing`, received when, says where their time went)."""
        writes = [write for m in manifests if (write := self._correlator.correlate(m))]
        self._counters.events_filtered += len(manifests) - len(writes)
        if writes and len(self._queue) >= self._capacity:
            self._dropped(len(writes))
            writes = []
        if not writes:
            if done is not None:
                done()
            return
        spent = timing or Timing(time.time())
        self._queue.append(_Queued(writes, group, done, decision, spent))
        self._queued.set()

    def _dropped(self, count: int) -> None:
        """Count Events dropped; log them unless a line did less than `DROPS_LOGGED_EVERY`
        seconds ago (the next line tells them)."""
        self._counters.events_dropped += count
        self._dropped_unlogged += count
        now = self._clock()
        logged = self._drops_logged_at
        if logged is not None and now - logged < DROPS_LOGGED_EVERY:
            return
        _log.warning(
            "events dropped: too many waiting",
            dropped=self._dropped_unlogged,
            waiting=len(self._queue),
            seconds=None if logged is None else round(now - logged, 1),
        )
        self._dropped_unlogged = 0
        self._drops_logged_at = now

    def waiting(self) -> int:
        """Decisions whose Events are not written yet."""
        return len(self._queue) + len(self._writing)

    async def run(self) -> None:
        """The writers: the queue in order, until cancelled."""
        with prioritized(Priority.EVENTS):
            writers = [asyncio.create_task(self._write_queue()) for _ in range(self._writers)]
            try:
                await asyncio.gather(*writers)
            finally:
                for writer in writers:
                    writer.cancel()
                await asyncio.gather(*writers, return_exceptions=True)

    async def _write_queue(self) -> None:
        while True:
            writing = self._next()
            if writing is None:
                self._queued.clear()
                await self._queued.wait()
                continue
            about = writing.about
            self._writing[about] = writing
            try:
                writing.timing.start()
                with timing(writing.timing):
                    for write in writing.writes:
                        await self._write(write)
                    if writing.done is not None:
                        writing.done()
            finally:
                del self._writing[about]
                self._queued.set()  # its object's next Events may go now
            async with self._written:
                self._written.notify_all()

    def _next(self) -> _Queued | None:
        """The first queued decision whose object has no Events being written."""
        for index, queued in enumerate(self._queue):
            if queued.about not in self._writing:
                del self._queue[index]
                return queued
        return None

    async def idle(self) -> None:
        """Until every Event recorded so far is written."""
        async with self._written:
            await self._written.wait_for(lambda: self.waiting() == 0)

    def forget(self, groups: Container[Hashable]) -> list[tuple[str, float]]:
        """Leave the Events of `groups` not yet written to whoever takes them over: they
        are not done, so they are carried out again (the one being written now may be
        written twice: the second is AlreadyExists). The decisions left, with the time
        each was received."""
        left = [queued for queued in self._queue if queued.group in groups]
        kept = [queued for queued in self._queue if queued.group not in groups]
        self._queue.clear()
        self._queue.extend(kept)
        for writing in self._writing.values():
            if writing.group in groups:
                writing.done = None
                left.append(writing)
        return [(queued.decision, queued.timing.first) for queued in left]

    async def _write(self, write: Write) -> None:
        """Create the Event, or patch the one it is counted into (created if gone). A
        refusal is logged and the Event given up."""
        collection, path = paths.of_manifest(write.event)
        try:
            if write.patch is not None:
                try:
                    await self._api.call("PATCH", path, body=write.patch, content_type=MERGE_PATCH)
                    return
                except KubeError as exc:
                    if exc.status != 404:
                        raise
            await self._api.create(collection, write.event)
        except KubeError as exc:
            self._counters.events_dropped += 1
            involved = write.event["involvedObject"]
            _log.warning(
                "event not written",
                job=f"{involved['namespace']}/{involved['name']}",
                reason=write.event["reason"],
                error=str(exc),
            )
