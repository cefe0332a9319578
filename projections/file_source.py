"""Events from a JSONL file (a recording, an export): the projections without Kafka."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator, Mapping
from itertools import islice
from pathlib import Path

from events.codec import DecodeError, decode_event
from projections.feed import Position, Sourced
from projections.store import Store


def file_source(path: Path) -> str:
    """The source name under which a file's positions are stored."""
    return f"file:{path.resolve()}"


def read_file(path: Path, *, start: int = 0) -> Iterator[Sourced]:
    """Each event of the file from line number `start` on (blank and `#` lines skipped)."""
    source = file_source(path)
    with path.open("rb") as lines:
        for number, line in enumerate(lines):
            if number < start:
                continue
            raw = line.strip()
            if not raw or raw.startswith(b"#"):
                continue
            try:
                event = decode_event(raw)
            except DecodeError as exc:
                raise DecodeError(f"{path}:{number + 1}: {exc}") from exc
            yield Sourced(event, raw, Position(source, 0, number))


class FileSource:
    """A JSONL file as a runner source: read once, from the line the store last reached."""

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

    async def batches(self, store: Store) -> AsyncIterator[list[Sourced]]:
        start = store.positions(file_source(self.path)).get(0, 0)
        self.total = await asyncio.to_thread(_count_lines, self.path)
        self.consumed = start
        events = read_file(self.path, start=start)
        while True:
            # decoding is the costly part: keep it off the event loop
            batch = await asyncio.to_thread(list, islice(events, self._batch_size))
            if not batch:
                break
            self.consumed = batch[-1].position.offset + 1
            yield batch
        self.consumed = self.total
        self._done = True


def _count_lines(path: Path) -> int:
    with path.open("rb") as data:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: data.read(1 << 20), b""))
