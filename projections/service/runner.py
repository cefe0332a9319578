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

from lavalog.projections.core.feed import Sourced
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


class Runner:
    """Runs one source into one store; its attributes are the feed's status."""

    def __init__(
        self, store: Store, source: Source, hub: LiveHub | None = None, *, read_ahead: bool = True
    ) -> None:
        """`read_ahead`: read (and decode) the next batch while this one is applied; see `run`."""
        self._store = store
        self._source = source
        self._hub = hub
        self._read_ahead = read_ahead
        self.applied = 0
        self.ready = False
        self.error: str | None = None

    def lag(self) -> Mapping[tuple[str, int], int]:
        return self._source.lag()

    async def run(self) -> None:
        """Apply batches until the source ends (a file) or the task is cancelled.

        Cancelled while a batch is being written, it waits for that batch to commit: the
        thread writing it cannot be stopped, and the store must not be closed under it.

        Reading ahead, the source waits for the broker while a batch is applied. Where
        both are work for this process (a file decoded while a bulk load folds) it gains
        nothing: the two threads take turns with the GIL, and pay for each turn.
        """
        try:
            async with contextlib.aclosing(self._batches()) as batches:
                async for batch, caught_up in batches:
                    if batch:
                        applied = await _finish(asyncio.to_thread(self._store.apply, batch))
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

    async def _batches(self) -> AsyncGenerator[tuple[Sequence[Sourced], bool], None]:
        """The source's batches, each with whether the source had caught up."""
        if not self._read_ahead:
            async for batch in self._source.batches(self._store):
                yield batch, self._source.caught_up
            return
        ahead: asyncio.Queue[tuple[Sequence[Sourced], bool] | Exception | None] = asyncio.Queue(2)

        async def read() -> None:
            try:
                async for batch in self._source.batches(self._store):
                    await ahead.put((batch, self._source.caught_up))
            except Exception as exc:
                await ahead.put(exc)
            else:
                await ahead.put(None)

        reader = asyncio.create_task(read())
        try:
            while (item := await ahead.get()) is not None:
                if isinstance(item, Exception):
                    raise item
                yield item
        finally:
            reader.cancel()
            await asyncio.gather(reader, return_exceptions=True)


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
