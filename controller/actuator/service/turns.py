"""Which job lanes work now: at most so many at once, pod work before status writes,
each with an assured share of the turns.

When the actuator falls behind (a burst of 10,000 Jobs), thousands of lanes wait. A lane
with pod work queued (a PodGroup or pod create, a kill: `core.priority`) goes before
lanes that have only status writes to make: those can trail, and status writes that
trail are often made unnecessary by later ones (`lane_order`). Not for good, though:
as API Priority and Fairness assures each priority level a share of the API server's
seats, each kind is assured its share of the turns (`SHARES`, as the rate limiter's
for the calls: pod work 4, status 2), and a free turn goes to the kind waiting that
holds the fewest for its share; a kind alone takes every turn. So a Job whose pods all
run is written Running during a burst of other Jobs' creates, not after the burst, as
Volcano's job controller, which serves its jobs in the order their changes came,
writes it. Within each kind, lanes take turns in the order they asked.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict

from lavalog.controller.actuator.core.priority import Priority
from lavalog.controller.actuator.service.ratelimit import SHARES


class Turns:
    """`kind = await turns.take(key, urgent)` ... `turns.give_back(kind)`: the kind the
    turn counts as (a lane promoted while it waited holds it as pod work); `promote(key)`
    moves a lane already waiting to the urgent ones. At most one waiter per key (one
    worker per lane)."""

    def __init__(self, count: int) -> None:
        if count < 1:
            raise ValueError(f"turns must be at least 1, not {count}")
        self._free = count
        #: the lanes waiting, and the turns held, by kind: pod work (urgent), status only
        self._waiting: dict[Priority, OrderedDict[str, asyncio.Future[Priority]]] = {
            Priority.PODS: OrderedDict(),
            Priority.STATUS: OrderedDict(),
        }
        self._holding = dict.fromkeys(self._waiting, 0)

    def would_wait(self) -> bool:
        """Whether a lane asking for a turn now would wait for it: every turn is taken."""
        return self._free == 0 or any(self._waiting.values())

    async def take(self, key: str, urgent: bool) -> Priority:
        kind = Priority.PODS if urgent else Priority.STATUS
        if not self.would_wait():
            self._free -= 1
            self._holding[kind] += 1
            return kind
        waiter: asyncio.Future[Priority] = asyncio.get_running_loop().create_future()
        self._waiting[kind][key] = waiter
        try:
            return await waiter
        except asyncio.CancelledError:
            for waiting in self._waiting.values():
                if waiting.get(key) is waiter:
                    del waiting[key]
            if waiter.done() and not waiter.cancelled():  # handed a turn as it was cancelled
                self.give_back(waiter.result())  # pass it on
            raise

    def promote(self, key: str) -> None:
        waiter = self._waiting[Priority.STATUS].pop(key, None)
        if waiter is not None:
            self._waiting[Priority.PODS][key] = waiter

    def give_back(self, kind: Priority) -> None:
        """A turn held as `kind` is free: it goes straight to the first lane of the kind
        waiting that holds the fewest turns for its share (ties: pod work)."""
        self._holding[kind] -= 1
        while True:
            waiting = [k for k, lanes in self._waiting.items() if lanes]
            if not waiting:
                self._free += 1
                return
            chosen = min(waiting, key=lambda k: (self._holding[k] / SHARES[k], k))
            _, waiter = self._waiting[chosen].popitem(last=False)
            if not waiter.done():
                self._holding[chosen] += 1
                waiter.set_result(chosen)
                return
