"""A clock and sleep for asyncio code that advance only when every task is waiting on them."""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections.abc import Collection


class FakeTime:
    def __init__(self) -> None:
        self.now = 0.0
        self._timers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._order = itertools.count()

    def clock(self) -> float:
        return self.now

    async def sleep(self, delay: float) -> None:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._timers, (self.now + max(delay, 0.0), next(self._order), future))
        await future

    async def run(self, tasks: Collection[asyncio.Future[object]]) -> None:
        """Let the tasks run; whenever all of them wait, jump to the earliest timer."""
        while not all(task.done() for task in tasks):
            for _ in range(50):
                await asyncio.sleep(0)
            if self._timers:
                when, _, future = heapq.heappop(self._timers)
                self.now = max(self.now, when)
                future.set_result(None)
        for task in tasks:
            task.result()
