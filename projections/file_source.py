"""Events from a JSONL file (a recording, an export): the projections without Kafka."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator, Mapping
from itertools import islice
from pathlib import Path

from events.codec import DecodeError, LogEvent, decode_event
from projections import decoding
from projections.feed import Batch, Position, Sourced
from projections.store import Store


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
    them (`projections.feed.Batch`), with `projections.decoding`."""

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
        lines = _lines(self.path, start)
        while True:
            batch = await asyncio.to_thread(self._read, lines, source)
            if not batch:
                break
            self.consumed = batch.offsets[-1] + 1
            yield batch
        self.consumed = self.total
        self._done = True

    def _read(self, lines: Iterator[tuple[int, bytes]], source: str) -> Batch:
        offsets: list[int] = []
        raws: list[bytes] = []
        for number, raw in islice(lines, self._batch_size):
            offsets.append(number)
            raws.append(raw)
        return Batch(raws, offsets, [(source, 0, len(raws))], decode=self._decode)

    def _decode(self, raw: bytes, number: int) -> LogEvent:
        try:
            return decoding.decode_event(raw)
        except DecodeError as exc:
            raise DecodeError(f"{self.path}:{number + 1}: {exc}") from exc


def _count_lines(path: Path) -> int:
    with path.open("rb") as data:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: data.read(1 << 20), b""))
