"""What the store is fed: an event, its bytes as received, and where it was read from."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import NamedTuple, overload

from lavalog.events.codec import LogEvent


class Position(NamedTuple):
    """A place in a source: a Kafka topic partition and offset, or a file and line number."""

    source: str
    partition: int
    offset: int


class Sourced(NamedTuple):
    event: LogEvent
    raw: bytes
    position: Position


class Applied(NamedTuple):
    """An event the store applied (not a duplicate), with its place in the store's log."""

    seq: int
    event: LogEvent
    raw: bytes


#: (source, partition, end): the events before `end` and after the previous run's end
#: were read from that partition
Run = tuple[str, int, int]


class Batch(Sequence[Sourced]):
    """A source's batch in columns: the events' bytes, their offsets, runs of partitions.

    The same as a list of `Sourced`, without the two tuples per event: a rebuild reads a
    million events, and building those tuples cost half as much as decoding. A source
    may leave the events undecoded (`decode`): the store decodes each few hundred events
    just before its writer process inserts them, so that the writer has work while this
    process decodes.
    """

    __slots__ = ("_decode", "_events", "offsets", "raws", "runs")

    def __init__(
        self,
        raws: list[bytes],
        offsets: Sequence[int],
        runs: list[Run],
        *,
        events: list[LogEvent] | None = None,
        decode: Callable[[list[bytes], Sequence[int]], list[LogEvent]] | None = None,
    ) -> None:
        """Either `events` (decoded already) or `decode(raws, offsets)` of some of them,
        which raises `events.codec.DecodeError` saying where a bad event is. `offsets`
        may be a range (a file's lines)."""
        if (events is None) == (decode is None):
            raise ValueError("a batch has its events decoded, or a way to decode them")
        self.raws = raws
        self.offsets = offsets
        self.runs = runs
        self._events = events
        self._decode = decode

    @classmethod
    def of(cls, items: Iterable[Sourced]) -> Batch:
        """The batch of a list of events (a test's, the store writer's `load`)."""
        raws: list[bytes] = []
        offsets: list[int] = []
        events: list[LogEvent] = []
        runs: list[Run] = []
        for event, raw, (source, partition, offset) in items:
            if runs and runs[-1][:2] == (source, partition):
                runs.pop()
            events.append(event)
            raws.append(raw)
            offsets.append(offset)
            runs.append((source, partition, len(raws)))
        return cls(raws, offsets, runs, events=events)

    @classmethod
    def joined(cls, parts: Sequence[Sequence[Sourced]]) -> Sequence[Sourced]:
        """The batches `parts` as one, in their order (one part: itself). A part a source
        left undecoded is decoded now."""
        if len(parts) == 1:
            return parts[0]
        raws: list[bytes] = []
        offsets: list[int] = []
        events: list[LogEvent] = []
        runs: list[Run] = []
        for part in parts:
            batch = part if isinstance(part, Batch) else cls.of(part)
            start = len(raws)
            events.extend(batch.events(0, len(batch)))
            raws.extend(batch.raws)
            offsets.extend(batch.offsets)
            runs.extend((source, partition, start + end) for source, partition, end in batch.runs)
        return cls(raws, offsets, runs, events=events)

    def events(self, start: int, stop: int) -> list[LogEvent]:
        """The events from `start` to `stop` (decoded now if the source left them so)."""
        if self._events is not None:
            return self._events[start:stop]
        assert self._decode is not None
        return self._decode(self.raws[start:stop], self.offsets[start:stop])

    def decoded(self) -> Batch:
        """This batch with every event decoded."""
        if self._events is not None:
            return self
        return Batch(self.raws, self.offsets, self.runs, events=self.events(0, len(self)))

    def next_offsets(self) -> dict[tuple[str, int], int]:
        """(source, partition) -> the offset after the last event read from it."""
        next_offsets: dict[tuple[str, int], int] = {}
        start = 0
        for source, partition, end in self.runs:
            if end > start:
                next_offsets[source, partition] = self.offsets[end - 1] + 1
            start = end
        return next_offsets

    def __iter__(self) -> Iterator[Sourced]:
        events = self.events(0, len(self))
        start = 0
        for source, partition, end in self.runs:
            for index in range(start, end):
                yield Sourced(
                    events[index],
                    self.raws[index],
                    Position(source, partition, self.offsets[index]),
                )
            start = end

    def __len__(self) -> int:
        return len(self.raws)

    @overload
    def __getitem__(self, index: int) -> Sourced: ...

    @overload
    def __getitem__(self, index: slice) -> list[Sourced]: ...

    def __getitem__(self, index: int | slice) -> Sourced | list[Sourced]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError("batch index out of range")
        source, partition, _ = self.runs[bisect_right([run[2] for run in self.runs], index)]
        offset = self.offsets[index]
        return Sourced(
            self.events(index, index + 1)[0], self.raws[index], Position(source, partition, offset)
        )
