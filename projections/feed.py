"""What the store is fed: an event, its bytes as received, and where it was read from."""

from __future__ import annotations

from typing import NamedTuple

from events.codec import LogEvent


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
