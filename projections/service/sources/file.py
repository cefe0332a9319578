"""Events from a JSONL file (a recording, an export): the projections without Kafka."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from itertools import islice
from pathlib import Path
from typing import IO

from lavalog.events.codec import DecodeError, LogEvent, decode_event
from lavalog.projections.core import decoding
from lavalog.projections.core.feed import Batch, Position, Sourced
from lavalog.projections.service.store.writer import Store


def file_source(path: Path) -> str:
    """The source name under which a file's positions are stored."""
    return f"file:{path.resolve()}"


def _lines(path: Path, start: int) -> Iterator[tuple[int, bytes]]:
    """(line number, line) of each event line from `start` on (blank and `#` lines skipped)."""
    with path.open("rb") as lines:
        for number, line in enumerate(lines):
            if number < start:
                continue
            raw = line.strip()
            if raw and not raw.startswith(b"#"):
                yield number, raw


def read_file(path: Path, *, start: int = 0) -> Iterator[Sourced]:
    """Each event of the file from line number `start` on (blank and `#` lines skipped),
    fully decoded (the audit replays them)."""
    source = file_source(path)
    for number, raw in _lines(path, start):
        try:
            event = decode_event(raw)
        except DecodeError as exc:
            raise DecodeError(f"{path}:{number + 1}: {exc}") from exc
        yield Sourced(event, raw, Position(source, 0, number))


class FileSource:
    """A JSONL file as a runner source: read once, from the line the store last reached.

    Its batches leave the events undecoded: the store decodes them as its writer inserts
    them (`projections.core.feed.Batch`), with `lavalog.projections.core.decoding`."""

    def __init__(self, path: Path, *, batch_size: int = 5_000) -> None:
        self.path = path
        self._batch_size = batch_size
        self._done = False
        #: lines in the file and lines read, for a progress bar
        self.total = 0
        self.consumed = 0

    @property
    def caught_up(self) -> bool:
        return self._done

    def lag(self) -> Mapping[tuple[str, int], int]:
        return {}

    async def batches(self, store: Store) -> AsyncIterator[Batch]:
        source = file_source(self.path)
        start = store.positions(source).get(0, 0)
        self.total = await asyncio.to_thread(_count_lines, self.path)
        self.consumed = start
        with self.path.open("rb") as lines:
            await asyncio.to_thread(deque, islice(lines, start), 0)  # skip what was read
            while lines_read := await asyncio.to_thread(self._read, lines, self.consumed, source):
                batch, self.consumed = lines_read
                yield batch  # maybe empty: lines that hold no event
        self.consumed = self.total
        self._done = True

    def _read(self, lines: IO[bytes], first: int, source: str) -> tuple[Batch, int] | None:
        """The next batch and the line number after it (None at the end of the file).

        Lines are split and stripped by the C loops of `islice` and a comprehension: the
        Python loop of `read_file` costs as much as decoding."""
        raws = [line.strip() for line in islice(lines, self._batch_size)]
        if not raws:
            return None
        after = first + len(raws)
        numbers: Sequence[int] = range(first, after)
        if skipped := [n for n, raw in enumerate(raws) if not raw or raw.startswith(b"#")]:
            left_out = set(skipped)
            numbers = [first + n for n in range(len(raws)) if n not in left_out]
            raws = [raw for n, raw in enumerate(raws) if n not in left_out]
        return Batch(raws, numbers, [(source, 0, len(raws))], decode=self._decode), after

    def _decode(self, raws: list[bytes], numbers: Sequence[int]) -> list[LogEvent]:
        try:
            return decoding.decode_events(raws)
        except DecodeError:  # which line: decode them one by one
            for raw, number in zip(raws, numbers, strict=True):
                try:
                    decoding.decode_event(raw)
                except DecodeError as exc:
                    raise DecodeError(f"{self.path}:{number + 1}: {exc}") from exc
            raise


def _count_lines(path: Path) -> int:
    with path.open("rb") as data:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: data.read(1 << 20), b""))
