"""Which job lanes work now: at most so many at once, those with urgent work first.

When the actuator falls behind (a burst of 10,000 Jobs), thousands of lanes wait. A lane
with pod work queued (a PodGroup or pod create, a kill: `core.priority`) takes the next
free turn before lanes that have only status writes to make: those can trail, and
status writes that trail are often made unnecessary by later ones (`lane_order`).
Within each kind, lanes take turns in the order they asked.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict


class Turns:
    """`await turns.take(key, urgent)` ... `turns.give_back()`; `promote(key)` moves a
    lane already waiting to the urgent ones. At most one waiter per key (one worker per
    lane)."""

    def __init__(self, count: int) -> None:
        if count < 1:
            raise ValueError(f"turns must be at least 1, not {count}")
        self._free = count
        self._urgent: OrderedDict[str, asyncio.Future[None]] = OrderedDict()
        self._others: OrderedDict[str, asyncio.Future[None]] = OrderedDict()

    async def take(self, key: str, urgent: bool) -> None:
        if self._free > 0 and not self._urgent and not self._others:
            self._free -= 1
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        (self._urgent if urgent else self._others)[key] = waiter
        try:
            await waiter
        except asyncio.CancelledError:
            if not waiter.cancelled():
                self.give_back()  # handed a turn just as it was cancelled: pass it on
            for waiting in (self._urgent, self._others):
                if waiting.get(key) is waiter:
                    del waiting[key]
            raise

    def promote(self, key: str) -> None:
        waiter = self._others.pop(key, None)
        if waiter is not None:
            self._urgent[key] = waiter

    def give_back(self) -> None:
        for waiting in (self._urgent, self._others):
            while waiting:
                _, waiter = waiting.popitem(last=False)
                if not waiter.done():
                    waiter.set_result(None)  # the turn goes straight to it
                    return
        self._free += 1
