"""The live stream: events fan out to subscribers (SSE clients) as soon as they are stored.

Publishing happens after the batch's commit, so a subscriber never sees an event that a
crash could take back. A subscriber that falls too far behind is dropped rather than
slowing the runner: its client reconnects and reads the gap from the store. The number
of subscribers is capped (each holds a connection and a queue): one more is refused.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager

import msgspec

from lavalog.events.topics import split_job_key
from lavalog.projections.core.feed import Applied


class StreamFilter(msgspec.Struct, frozen=True, kw_only=True):
    """Which events a subscriber wants: one job, one namespace, some event types."""

    key: str = ""
    namespace: str = ""
    types: frozenset[str] = frozenset()

    def matches(self, item: Applied) -> bool:
        event = item.event
        if self.key and event.key != self.key:
            return False
        if self.namespace and split_job_key(event.key)[0] != self.namespace:
            return False
        return not self.types or type(event).__name__ in self.types


#: event streams open at once, by default
MAX_STREAMS = 100


class TooManyStreams(Exception):
    """As many streams as allowed are open: try again later."""


class LiveHub:
    """Fan-out of applied events to the subscribers of one event loop."""

    def __init__(self, *, queue_size: int = 10_000, max_streams: int = MAX_STREAMS) -> None:
        self._queue_size = queue_size
        self._max_streams = max_streams
        self._subscribers: dict[asyncio.Queue[Applied | None], StreamFilter] = {}

    def publish(self, applied: Iterable[Applied]) -> None:
        """Hand events to every subscriber whose filter matches (call from the loop)."""
        if not self._subscribers:
            return
        for item in applied:
            for queue, wanted in list(self._subscribers.items()):
                if not wanted.matches(item):
                    continue
                if queue.qsize() >= self._queue_size - 1:
                    del self._subscribers[queue]
                    queue.put_nowait(None)
                else:
                    queue.put_nowait(item)

    def close(self) -> None:
        """End every subscription (the server is shutting down)."""
        for queue in self._subscribers:
            queue.put_nowait(None)
        self._subscribers.clear()

    @asynccontextmanager
    async def subscribe(self, wanted: StreamFilter) -> AsyncIterator[asyncio.Queue[Applied | None]]:
        """A queue of matching events; `None` in it means the subscriber was dropped.
        TooManyStreams when `max_streams` are open already."""
        if len(self._subscribers) >= self._max_streams:
            raise TooManyStreams(
                f"{self._max_streams} event streams are open, the most this server keeps"
                " (--max-streams): try again later"
            )
        queue: asyncio.Queue[Applied | None] = asyncio.Queue()
        self._subscribers[queue] = wanted
        try:
            yield queue
        finally:
            self._subscribers.pop(queue, None)
