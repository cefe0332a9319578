"""All encoding of the two public topics in one place: JSON via msgspec.

Decoders are built once and reused: decoding is on every hot path. Unknown fields are
ignored, so a reader keeps working when a newer writer adds fields (changes are
additive; a breaking change bumps `SCHEMA_VERSION` and adds an upcaster here).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import msgspec

from lavalog.events.decisions import AnyDecision
from lavalog.events.observations import AnyObservation

LogEvent = AnyObservation | AnyDecision

_encoder = msgspec.json.Encoder()
_observation_decoder: msgspec.json.Decoder[AnyObservation] = msgspec.json.Decoder(AnyObservation)
_decision_decoder: msgspec.json.Decoder[AnyDecision] = msgspec.json.Decoder(AnyDecision)
_event_decoder: msgspec.json.Decoder[LogEvent] = msgspec.json.Decoder(LogEvent)


class DecodeError(ValueError):
    """A message that is not a valid event of its topic (a poison message)."""


def encode(event: LogEvent) -> bytes:
    return _encoder.encode(event)


def decode_observation(data: bytes) -> AnyObservation:
    try:
        return _observation_decoder.decode(data)
    except msgspec.DecodeError as exc:
        raise DecodeError(str(exc)) from exc


def decode_decision(data: bytes) -> AnyDecision:
    try:
        return _decision_decoder.decode(data)
    except msgspec.DecodeError as exc:
        raise DecodeError(str(exc)) from exc


def decode_event(data: bytes) -> LogEvent:
    """An observation or a decision, whichever the message is (for mixed JSONL files)."""
    try:
        return _event_decoder.decode(data)
    except msgspec.DecodeError as exc:
        raise DecodeError(str(exc)) from exc


def to_builtins(event: LogEvent) -> dict[str, Any]:
    """The event as plain JSON-compatible Python values."""
    result: dict[str, Any] = msgspec.to_builtins(event)
    return result


def read_jsonl(lines: Iterable[bytes | str]) -> Iterator[LogEvent]:
    """Events from JSON lines; blank lines and `#` comments are skipped.

    A bad line raises DecodeError naming its line number.
    """
    for number, line in enumerate(lines, start=1):
        data = line.encode() if isinstance(line, str) else line
        stripped = data.strip()
        if not stripped or stripped.startswith(b"#"):
            continue
        try:
            yield decode_event(stripped)
        except DecodeError as exc:
            raise DecodeError(f"line {number}: {exc}") from exc


def write_jsonl(events: Iterable[LogEvent]) -> Iterator[bytes]:
    """One JSON line (with its newline) per event."""
    for event in events:
        yield _encoder.encode(event) + b"\n"
