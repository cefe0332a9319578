"""Which Kafka offset may be committed when decisions finish out of order, and which of
the decisions after it are already carried out.

Decisions of different jobs on one partition are carried out in parallel, so they finish
in any order; the committed offset must never pass one that is not done, or a crash
would skip it. Per partition the offsets received are kept in order, and the commit
position is the first one not yet done (or, with none pending, one past the last
received). One slow decision would hold that position back while the other jobs' lanes
go on, and a crash would then repeat all their work: so the progress to record is the
position and the offsets after it that are already done (`Progress`), and a member
resuming the partition skips those (`progress_log` keeps them beside the commit). After
a crash only what was really in flight is applied again, which idempotent writes make
harmless. Pure: no Kafka, no clock.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

P = TypeVar("P", bound=Hashable)

_PREFIX = "done:"


@dataclass(frozen=True, slots=True)
class Progress:
    """One partition's commit: every offset before `offset` is carried out, and so are
    those in `done` (all after it)."""

    offset: int
    done: tuple[int, ...] = ()

    def encode(self) -> bytes:
        """`done` as ranges relative to `offset`: b"17 done:1-3,7" (18, 19, 20 and 24)."""
        parts = []
        for first, last in _ranges(self.done):
            start, end = first - self.offset, last - self.offset
            parts.append(f"{start}" if start == end else f"{start}-{end}")
        return f"{self.offset} {_PREFIX}{','.join(parts)}".encode()

    @classmethod
    def decode(cls, data: bytes) -> Progress | None:
        """What `encode` wrote; None for anything else."""
        try:
            offset_text, _, done_text = data.decode().partition(" ")
            offset = int(offset_text)
            if not done_text.startswith(_PREFIX):
                return None
            done: list[int] = []
            for part in filter(None, done_text[len(_PREFIX) :].split(",")):
                first, _, last = part.partition("-")
                done.extend(range(offset + int(first), offset + int(last or first) + 1))
        except ValueError:  # UnicodeDecodeError included
            return None
        return cls(offset, tuple(done))


def _ranges(offsets: Iterable[int]) -> list[tuple[int, int]]:
    found: list[tuple[int, int]] = []
    for offset in sorted(offsets):
        if found and offset == found[-1][1] + 1:
            found[-1] = (found[-1][0], offset)
        else:
            found.append((offset, offset))
    return found


@dataclass(slots=True)
class _Partition:
    pending: deque[int] = field(default_factory=deque)
    #: offsets done while an earlier one is still pending
    done: set[int] = field(default_factory=set)
    #: offsets a previous owner had already carried out (from its last commit)
    done_before: set[int] = field(default_factory=set)
    next: int = 0
    committed: Progress | None = None

    def progress(self) -> Progress:
        position = self.pending[0] if self.pending else self.next
        return Progress(position, tuple(sorted(self.done | self.done_before)))


class OffsetTracker(Generic[P]):
    """Offsets received and done, per partition `P` (a TopicPartition, or anything hashable)."""

    def __init__(self) -> None:
        self._partitions: dict[P, _Partition] = {}

    def resume(self, partition: P, progress: Progress) -> None:
        """The partition's last commit, before its messages arrive: the offsets it says
        are done will not be carried out again."""
        self._partitions[partition] = _Partition(
            done_before=set(progress.done), next=progress.offset, committed=progress
        )

    def expected(self, partition: P) -> int | None:
        """The offset the partition's next message should have (None before any): offsets
        arrive one after the other, so another one means messages were skipped or repeated."""
        state = self._partitions.get(partition)
        return None if state is None else state.next

    def missing_before(self, partition: P, offset: int) -> int | None:
        """The offset to fetch again from when `offset` arrives past the expected one:
        the messages between were never handed out, so a commit after `offset` would pass
        them. None when `offset` is not past it."""
        expected = self.expected(partition)
        return expected if expected is not None and offset > expected else None

    def received(self, partition: P, offset: int) -> bool:
        """A message was handed out (offsets of one partition arrive in increasing order);
        False when it was already carried out: before the position the partition was
        resumed from or the next expected one, or listed as done in the last commit."""
        state = self._partitions.get(partition)
        if state is not None and offset < state.next:
            return False  # handed out again (a fetch from behind the position): done
        state = self._partitions.setdefault(partition, _Partition())
        state.pending.append(offset)
        state.next = offset + 1
        if offset in state.done_before:
            state.done_before.discard(offset)
            self.done(partition, offset)
            return False
        return True

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
        return None if state is None else state.progress().offset

    def to_commit(self, partitions: Iterable[P] | None = None) -> dict[P, Progress]:
        """Progress that changed since it was last committed (of `partitions`, or all)."""
        chosen = self._partitions if partitions is None else partitions
        found = {}
        for partition in chosen:
            state = self._partitions.get(partition)
            if state is None:
                continue
            progress = state.progress()  # sorts what is done: once per partition
            if progress != state.committed:
                found[partition] = progress
        return found

    def committed(self, progress: dict[P, Progress]) -> None:
        """The broker has stored this progress."""
        for partition, stored in progress.items():
            state = self._partitions.get(partition)
            if state is not None:
                state.committed = stored

    def in_flight(self) -> int:
        """Messages received and not done, over all partitions."""
        return sum(len(s.pending) - len(s.done) for s in self._partitions.values())

    def forget(self, partitions: Iterable[P]) -> None:
        """Drop partitions this consumer no longer owns."""
        for partition in partitions:
            self._partitions.pop(partition, None)
