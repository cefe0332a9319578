"""The runner: feeds the store from a source, batch by batch, and publishes what was new.

Sources decide where reading starts (the positions stored with the data) and when
they have caught up; the runner only applies batches in a worker thread (SQLite
blocks) and reports its progress to `/readyz`, `/healthz` and `/metrics`.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, AsyncIterator, Coroutine, Mapping, Sequence
from typing import Any, Protocol, TypeVar

import structlog

from lavalog.projections.core.feed import Applied, Batch, Sourced
from lavalog.projections.service.live import LiveHub
from lavalog.projections.service.store.writer import Store

log = structlog.get_logger(__name__)
T = TypeVar("T")


class Source(Protocol):
    """A stream of event batches for one store."""

    def batches(self, store: Store) -> AsyncIterator[Sequence[Sourced]]:
        """Batches from where `store`'s positions say this source was left (maybe empty)."""
        ...

    @property
    def caught_up(self) -> bool:
        """Everything that was in the source when reading began has been read."""
        ...

    def lag(self) -> Mapping[tuple[str, int], int]: ...


#: Seconds from the start of one transaction to the next while events trickle in: what
#: arrives meanwhile is applied as one batch. Each transaction writes the rows of every job
#: it touched again (with the job's whole history) and its changed pages to SQLite's log,
#: so applying each poll's few dozen events on its own cost more than the events did.
COMMIT_INTERVAL = 0.2
#: Events read ahead of the batch being applied, at most (then reading waits).
READ_AHEAD = 20_000


class Runner:
    """Runs one source into one store; its attributes are the feed's status."""

    def __init__(
        self,
        store: Store,
        source: Source,
        hub: LiveHub | None = None,
        *,
        read_ahead: bool = True,
        commit_interval: float = COMMIT_INTERVAL,
    ) -> None:
        """`read_ahead`: read (and decode) the next batches while one is applied, and apply
        those read meanwhile together, at most one transaction per `commit_interval`
        seconds; see `run`."""
        self._store = store
        self._source = source
        self._hub = hub
        self._read_ahead = read_ahead
        self._commit_interval = commit_interval
        self.applied = 0
        self.ready = False
        self.error: str | None = None

    def lag(self) -> Mapping[tuple[str, int], int]:
        return self._source.lag()

    async def run(self) -> None:
        """Apply batches until the source ends (a file) or the task is cancelled.

        Cancelled while a batch is being written, it waits for that batch to commit: the
        thread writing it cannot be stopped, and the store must not be closed under it.

        Reading ahead, the source waits for the broker while a batch is applied, and
        the live stream gets a batch's events once its transaction commits, within
        `commit_interval` of their arrival when the store keeps up. Where reading and
        applying are both work for this process (a file decoded while a bulk load folds)
        reading ahead gains nothing: the two threads take turns with the GIL, and pay for
        each turn.
        """
        try:
            async with contextlib.aclosing(self._batches()) as batches:
                async for parts, caught_up in batches:
                    if parts:
                        applied = await _finish(asyncio.to_thread(self._apply, parts))
                        self.applied += len(applied)
                        if self._hub is not None:
                            self._hub.publish(applied)
                    if caught_up and not self.ready:
                        self.ready = True
                        log.info("projections caught up", applied=self.applied)
            self.ready = True
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            # /healthz says so; the exception goes on to whoever runs the feed, who reports
            # it (once: `lavalog projections serve: cannot reach Kafka ...`)
            self.error = f"{type(exc).__name__}: {exc}"
            raise

    def _apply(self, parts: list[Sequence[Sourced]]) -> list[Applied]:
        """The source's batches in one transaction (joined in the writing thread)."""
        return self._store.apply(Batch.joined(parts))

    async def _batches(
        self,
    ) -> AsyncGenerator[tuple[list[Sequence[Sourced]], bool], None]:
        """The source's non-empty batches to apply together, each time with whether the
        source had caught up."""
        if not self._read_ahead:
            async for batch in self._source.batches(self._store):
                yield ([batch] if batch else []), self._source.caught_up
            return
        ahead = _ReadAhead(self._source, self._store)
        reader = asyncio.create_task(ahead.read())
        loop = asyncio.get_running_loop()
        began = -self._commit_interval
        try:
            while True:
                await ahead.arrived()
                wait = began + self._commit_interval - loop.time()
                if ahead.events and wait > 0 and ahead.events < READ_AHEAD:
                    await asyncio.sleep(wait)  # let more arrive for the same transaction
                parts, caught_up, ended = await ahead.take()
                if parts:
                    began = loop.time()
                yield parts, caught_up
                if isinstance(ended, Exception):
                    raise ended
                if ended:
                    return
        finally:
            reader.cancel()
            await asyncio.gather(reader, return_exceptions=True)


class _ReadAhead:
    """A source's batches read while others are applied, handed over all at once."""

    def __init__(self, source: Source, store: Store) -> None:
        self._source = source
        self._store = store
        self._parts: list[Sequence[Sourced]] = []
        #: whether the source had caught up after the last batch read, and whether that
        #: was handed over (it needs telling once)
        self._caught_up = False
        self._told = False
        #: None while reading; then True (the source ended) or what it raised
        self._ended: bool | Exception | None = None
        #: events in the batches held
        self.events = 0
        self._changed = asyncio.Condition()

    async def read(self) -> None:
        try:
            async for batch in self._source.batches(self._store):
                caught_up = self._source.caught_up
                async with self._changed:
                    await self._changed.wait_for(lambda: self.events < READ_AHEAD)
                    if batch:
                        self._parts.append(batch)
                        self.events += len(batch)
                    self._caught_up = caught_up
                    self._changed.notify_all()
            ended: bool | Exception = True
        except Exception as exc:
            ended = exc
        async with self._changed:
            self._ended = ended
            self._changed.notify_all()

    async def arrived(self) -> None:
        """Return once there are batches, news that the source caught up, or its end."""
        async with self._changed:
            await self._changed.wait_for(
                lambda: (
                    bool(self._parts)
                    or self._ended is not None
                    or (self._caught_up and not self._told)
                )
            )

    async def take(self) -> tuple[list[Sequence[Sourced]], bool, bool | Exception | None]:
        """The batches held, whether the source had caught up after the last, and how
        reading ended (None: it goes on)."""
        async with self._changed:
            parts, self._parts, self.events = self._parts, [], 0
            self._told = self._told or self._caught_up
            self._changed.notify_all()
            return parts, self._caught_up, self._ended


async def _finish(work: Coroutine[Any, Any, T]) -> T:
    """Await `work`; if cancelled meanwhile, let it complete first, then stop."""
    task = asyncio.ensure_future(work)
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        while not task.done():
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.shield(task)
        raise
