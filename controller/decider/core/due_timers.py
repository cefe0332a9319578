"""Pending durable timers of the jobs a decider instance owns, earliest first."""

from __future__ import annotations

import heapq

import msgspec


class DueTimer(msgspec.Struct, frozen=True, order=True):
    fire_at: float
    key: str
    job_uid: str
    timer_id: str


class TimerQueue:
    """A heap of timers; a timer is fired at most once per queue, cancelled ones are
    dropped lazily (the decider ignores a TimerFired whose timer it no longer holds)."""

    def __init__(self) -> None:
        self._heap: list[DueTimer] = []
        self._queued: set[str] = set()

    def add(self, timer: DueTimer) -> None:
        if timer.timer_id not in self._queued:
            self._queued.add(timer.timer_id)
            heapq.heappush(self._heap, timer)

    def pop_due(self, now: float) -> list[DueTimer]:
        due = []
        while self._heap and self._heap[0].fire_at <= now:
            timer = heapq.heappop(self._heap)
            self._queued.discard(timer.timer_id)
            due.append(timer)
        return due

    def next_fire_at(self) -> float | None:
        return self._heap[0].fire_at if self._heap else None

    def drop_keys(self, keys: set[str]) -> None:
        """Forget the timers of jobs this instance no longer owns."""
        kept = [timer for timer in self._heap if timer.key not in keys]
        self._queued = {timer.timer_id for timer in kept}
        self._heap = kept
        heapq.heapify(self._heap)

    def __len__(self) -> int:
        return len(self._heap)
