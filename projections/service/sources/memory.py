"""Events held in memory as a runner source: a recording replayed through the decider.

`lavalog replay FILE --serve` recomputes a recording's decisions and serves the log it
made without writing it anywhere first. That log is fed from its beginning every time
(the store's positions are not consulted): its ids are deterministic, so a store that
already holds it takes a second feeding as duplicates.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping, Sequence

from lavalog.events.codec import LogEvent, encode
from lavalog.projections.core.feed import Position, Sourced
from lavalog.projections.service.store.writer import Store


class MemorySource:
    """A sequence of events as a runner source, read once; `name` labels its positions."""

    def __init__(self, events: Sequence[LogEvent], *, name: str, batch_size: int = 5_000) -> None:
        self._events = events
        self._name = name
        self._batch_size = batch_size
        self._done = False

    @property
    def caught_up(self) -> bool:
        return self._done

    def lag(self) -> Mapping[tuple[str, int], int]:
        return {}

    async def batches(self, store: Store) -> AsyncIterator[list[Sourced]]:
        for start in range(0, len(self._events), self._batch_size):
            chunk = self._events[start : start + self._batch_size]
            yield [
                Sourced(event, encode(event), Position(self._name, 0, start + n))
                for n, event in enumerate(chunk)
            ]
            await asyncio.sleep(0)  # let the server answer between batches
        self._done = True
