"""One lane per job: a job's decisions one at a time in log order, different jobs in parallel.

As kopf's `queueing.py` does for resource events: a key with work gets a worker task,
which handles its items in order and ends when its lane is empty; the next item for the
key starts a new one. So a slow job (a 1,000-pod create) delays only its own later
decisions, and a job's StatusWrite never overtakes the PodsCreate decided before it.
"""

from __future__ import annotations

import asyncio
import itertools
from collections import deque
from collections.abc import Awaitable, Callable, Container, Hashable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

import structlog

T = TypeVar("T")
_log = structlog.get_logger("lavalog.actuator")


@dataclass(slots=True)
class _Lane(Generic[T]):
    group: Hashable
    items: deque[T] = field(default_factory=deque)


class KeyedQueues(Generic[T]):
    """`put(key, group, item)`; `handle(item)` runs for each item, serially per key.

    `group` (the Kafka partition) says which lanes `drain` waits for when partitions go.
    """

    def __init__(self, handle: Callable[[T], Awaitable[None]]) -> None:
        self._handle = handle
        self._lanes: dict[str, _Lane[T]] = {}
        self._workers: dict[str, asyncio.Task[None]] = {}

    def put(self, key: str, group: Hashable, item: T) -> None:
        lane = self._lanes.get(key)
        if lane is None:
            lane = self._lanes[key] = _Lane(group)
            worker = asyncio.create_task(self._work(key, lane), name=f"actuator {key}")
            worker.add_done_callback(_report_crash)
            self._workers[key] = worker
        lane.items.append(item)

    def behind(self, key: str) -> list[T]:
        """The items queued in `key`'s lane after the one being handled, in order."""
        lane = self._lanes.get(key)
        return list(itertools.islice(lane.items, 1, None)) if lane is not None else []

    def __len__(self) -> int:
        """Keys with work."""
        return len(self._lanes)

    async def drain(self, grace: float, groups: Container[Hashable] | None = None) -> None:
        """Let the lanes (of `groups`, or all) finish; after `grace` seconds cancel the rest,
        whose unfinished items are then simply not done."""
        workers = [
            self._workers[key]
            for key, lane in self._lanes.items()
            if groups is None or lane.group in groups
        ]
        if not workers:
            return
        _, late = await asyncio.wait(workers, timeout=grace)
        for worker in late:
            worker.cancel()
        await asyncio.gather(*late, return_exceptions=True)

    async def _work(self, key: str, lane: _Lane[T]) -> None:
        try:
            while lane.items:
                await self._handle(lane.items[0])
                lane.items.popleft()
        finally:
            del self._lanes[key]
            del self._workers[key]


def _report_crash(worker: asyncio.Task[None]) -> None:
    if not worker.cancelled() and worker.exception() is not None:
        _log.error("lane stopped", worker=worker.get_name(), exc_info=worker.exception())
