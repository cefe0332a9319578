"""One lane per job: a job's decisions one at a time, different jobs in parallel.

As kopf's `queueing.py` does for resource events: a key with work gets a worker task,
which handles its items and ends when its lane is empty; the next item for the key
starts a new one. So a slow job (a 1,000-pod create) delays only its own later
decisions, and a job's StatusWrite never overtakes the PodsCreate decided before it.
Items are handled in order unless `pick` chooses a later one (`lane_order.next_up`);
a lane may `hold` its items a while for more to come (`status_hold`), taking no turn
meanwhile; lanes take `turns`, those with an `urgent` item first, and a lane whose item
waits to retry a call gives its turn to another meanwhile (`step_aside`). A lane's turn
covers the items queued when it was taken (`_sync`), not one item each: with thousands
of lanes waiting, a turn per item would take every job a step further in each round and
finish none of them until the last round.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
from collections.abc import (
    AsyncIterator,
    Awaitable,
    Callable,
    Container,
    Hashable,
    Iterator,
    Sequence,
)
from dataclasses import dataclass, field
from typing import Generic, TypeVar, overload

import structlog

from lavalog.controller.actuator.core.priority import Priority
from lavalog.controller.actuator.service.turns import Turns

T = TypeVar("T")
_log = structlog.get_logger("lavalog.actuator")


@dataclass(slots=True)
class _Lane(Generic[T]):
    group: Hashable
    items: list[T] = field(default_factory=list)
    #: the item being handled, if one is
    current: T | None = None
    #: set when items are put or dropped: wakes a lane that holds its items
    changed: asyncio.Event = field(default_factory=asyncio.Event)


@dataclass(slots=True)
class _Turn:
    """The turn the current lane's worker holds, while it holds it."""

    turns: Turns
    key: str
    urgent: bool
    held: bool = False
    #: the kind it counts as (`Turns.take`)
    kind: Priority = Priority.STATUS

    async def take(self) -> None:
        self.kind = await self.turns.take(self.key, self.urgent)
        self.held = True

    def give_back(self) -> None:
        self.held = False
        self.turns.give_back(self.kind)


_CURRENT: contextvars.ContextVar[_Turn | None] = contextvars.ContextVar("lane_turn", default=None)


@contextlib.asynccontextmanager
async def aside() -> AsyncIterator[None]:
    """Wait in this block without holding the lane's turn (a call waiting to be retried, a
    watch for a deletion: they hold up their own job, never the others); then take a turn
    again. Outside a lane, or when another task of the lane stepped aside already, a
    plain block."""
    turn = _CURRENT.get()
    if turn is None or not turn.held:
        yield
        return
    turn.give_back()
    try:
        yield
    except asyncio.CancelledError:
        raise  # no turn to give back when the worker ends
    except BaseException:
        await turn.take()
        raise
    await turn.take()


async def step_aside(delay: float) -> None:
    """Sleep `delay` seconds aside (`aside`): the API client's sleep between retries."""
    async with aside():
        await asyncio.sleep(delay)


def _first(items: Sequence[object]) -> int:
    return 0


def _never(item: object) -> bool:
    return False


def _no_hold(items: Sequence[object]) -> float:
    return 0.0


def _supersedes_none(items: Sequence[object]) -> int | None:
    return None


class _Behind(Sequence[T]):
    """The items queued behind `item` in its lane, as they are when looked at (more may
    come while `item` is handled)."""

    def __init__(self, items: list[T], item: T) -> None:
        self._items = items
        self._item = item

    def _now(self) -> list[T]:
        for index, queued in enumerate(self._items):
            if queued is self._item:
                return self._items[index + 1 :]
        return []

    @overload
    def __getitem__(self, index: int) -> T: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[T]: ...
    def __getitem__(self, index: int | slice) -> T | Sequence[T]:
        return self._now()[index]

    def __len__(self) -> int:
        return len(self._now())

    def __iter__(self) -> Iterator[T]:
        return iter(self._now())


class KeyedQueues(Generic[T]):
    """`put(key, group, item)`; `handle(item, later)` runs for each item, serially per key,
    `later` being the items queued behind it (as they are whenever it is looked at).
    `hold(items)`: the seconds a lane waits for more items before it handles the next of
    `items` (woken early by one), then asks again; 0 to go on. `supersedes(items)`: the
    index of the item that the last of `items`, just put, makes unnecessary, or None.

    `group` (the Kafka partition) says which lanes `drain` waits for when partitions go.
    """

    def __init__(
        self,
        handle: Callable[[T, Sequence[T]], Awaitable[None]],
        *,
        turns: int = 1_000_000,
        pick: Callable[[Sequence[T]], int] = _first,
        urgent: Callable[[T], bool] = _never,
        hold: Callable[[Sequence[T]], float] = _no_hold,
        supersedes: Callable[[Sequence[T]], int | None] = _supersedes_none,
    ) -> None:
        self._handle = handle
        self._hold = hold
        self._supersedes = supersedes
        self._turns = Turns(turns)
        self._pick = pick
        self._urgent = urgent
        self._lanes: dict[str, _Lane[T]] = {}
        self._workers: dict[str, asyncio.Task[None]] = {}

    def put(self, key: str, group: Hashable, item: T) -> T | None:
        """Queue `item` in the lane of `key`; the waiting item it supersedes, taken out of
        the lane (never the one being handled), for the caller to count as done."""
        lane = self._lanes.get(key)
        if lane is None:
            lane = self._lanes[key] = _Lane(group)
            worker = asyncio.create_task(self._work(key, lane), name=f"actuator {key}")
            worker.add_done_callback(_report_crash)
            self._workers[key] = worker
        lane.items.append(item)
        superseded = None
        index = self._supersedes(lane.items)
        if index is not None and lane.items[index] is not lane.current:
            superseded = lane.items.pop(index)
        lane.changed.set()
        if self._urgent(item):
            self._turns.promote(key)
        return superseded

    def behind(self) -> bool:
        """Whether a lane would wait for its turn now: every turn is taken."""
        return self._turns.would_wait()

    def __len__(self) -> int:
        """Keys with work."""
        return len(self._lanes)

    def queued(self) -> int:
        """Items in every lane, the one being handled included."""
        return sum(len(lane.items) for lane in self._lanes.values())

    def deepest(self) -> int:
        """Items in the longest lane."""
        return max((len(lane.items) for lane in self._lanes.values()), default=0)

    def drop_waiting(self, groups: Container[Hashable] | None = None) -> list[T]:
        """Drop the items of the lanes (of `groups`, or all) that are not being handled:
        when the groups go to another consumer, that one does them (they are not done),
        and only what is under way must be finished first. The items dropped."""
        dropped: list[T] = []
        for lane in self._lanes.values():
            if groups is None or lane.group in groups:
                dropped += [item for item in lane.items if item is not lane.current]
                lane.items[:] = [] if lane.current is None else [lane.current]
                lane.changed.set()
        return dropped

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
                if (wait := self._hold(lane.items)) > 0:
                    await _more(lane, wait)
                    continue
                turn = _Turn(self._turns, key, any(self._urgent(item) for item in lane.items))
                await turn.take()
                _CURRENT.set(turn)
                try:
                    await self._sync(lane, turn)
                finally:
                    lane.current = None
                    if turn.held:  # not when cancelled while stepping aside
                        turn.give_back()
        finally:
            del self._lanes[key]
            del self._workers[key]

    async def _sync(self, lane: _Lane[T], turn: _Turn) -> None:
        """In one turn, the lane's items queued when it was taken (at least one, unless
        they were dropped while the lane waited), as Volcano's job controller syncs a
        job once for everything queued about it: a job's writes follow each other, not
        the other jobs' queued meanwhile, so each job gets done rather than every job a
        step further. The turn goes back early at an item queued since (it asks again,
        behind the lanes waiting), at work not urgent in an urgent turn (it waits as
        what it is) and at an item to hold (`hold`)."""
        before = list(lane.items)  # held, so that no later item can take one of their ids
        queued = {id(item) for item in before}
        first = True
        while lane.items:
            item = lane.items[self._pick(lane.items)]
            if not first and (
                id(item) not in queued
                or (turn.kind is Priority.PODS and not self._urgent(item))
                or self._hold(lane.items) > 0
            ):
                return
            first = False
            lane.current = item
            await self._handle(item, _Behind(lane.items, item))
            _remove(lane.items, item)
            lane.current = None


async def _more(lane: _Lane[T], wait: float) -> None:
    """Until an item is put in `lane` or dropped from it, `wait` seconds at most."""
    lane.changed.clear()
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(wait):
            await lane.changed.wait()


def _remove(items: list[T], item: T) -> None:
    """Take out `item` itself (the list may have changed while it was handled)."""
    for index, queued in enumerate(items):
        if queued is item:
            del items[index]
            return


def _report_crash(worker: asyncio.Task[None]) -> None:
    if not worker.cancelled() and worker.exception() is not None:
        _log.error("lane stopped", worker=worker.get_name(), exc_info=worker.exception())
