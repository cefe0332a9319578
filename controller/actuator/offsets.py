"""Which Kafka offset may be committed when decisions finish out of order.

Decisions of different jobs on one partition are carried out in parallel, so they finish
in any order; the committed offset must never pass one that is not done, or a crash
would skip it. Per partition the offsets received are kept in order, and the commit
position is the first one not yet done (or, with none pending, one past the last
received). After a crash everything from there is applied again, which idempotent
writes make harmless. Pure: no Kafka, no clock.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

P = TypeVar("P", bound=Hashable)


@dataclass(slots=True)
class _Partition:
    pending: deque[int] = field(default_factory=deque)
    done: set[int] = field(default_factory=set)
    next: int = 0
    committed: int | None = None

    def position(self) -> int:
        return self.pending[0] if self.pending else self.next


class OffsetTracker(Generic[P]):
    """Offsets received and done, per partition `P` (a TopicPartition, or anything hashable)."""

    def __init__(self) -> None:
        self._partitions: dict[P, _Partition] = {}

    def received(self, partition: P, offset: int) -> None:
        """A message was handed out; offsets of one partition arrive in increasing order."""
        state = self._partitions.setdefault(partition, _Partition())
        state.pending.append(offset)
        state.next = offset + 1

    def done(self, partition: P, offset: int) -> None:
        """The message at `offset` is carried out (ignored if the partition was forgotten)."""
        state = self._partitions.get(partition)
        if state is None:
            return
        state.done.add(offset)
        while state.pending and state.pending[0] in state.done:
            state.done.remove(state.pending.popleft())

    def position(self, partition: P) -> int | None:
        """The offset to commit: everything before it is done. None before any message."""
        state = self._partitions.get(partition)
        return None if state is None else state.position()

    def to_commit(self, partitions: Iterable[P] | None = None) -> dict[P, int]:
        """Positions that moved since they were last committed (of `partitions`, or all)."""
        chosen = self._partitions if partitions is None else partitions
        found = {}
        for partition in chosen:
            state = self._partitions.get(partition)
            if state is not None and state.position() != state.committed:
                found[partition] = state.position()
        return found

    def committed(self, positions: dict[P, int]) -> None:
        """The broker has stored these positions."""
        for partition, position in positions.items():
            state = self._partitions.get(partition)
            if state is not None:
                state.committed = position

    def in_flight(self) -> int:
        """Messages received and not done, over all partitions."""
        return sum(len(s.pending) - len(s.done) for s in self._partitions.values())

    def forget(self, partitions: Iterable[P]) -> None:
        """Drop partitions this consumer no longer owns."""
        for partition in partitions:
            self._partitions.pop(partition, None)
