"""Events from a JSONL file (a recording, an export): the projections without Kafka."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from events.codec import DecodeError, decode_event
from projections.feed import Position, Sourced


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
