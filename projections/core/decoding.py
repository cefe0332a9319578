"""Events as the projections decode them: a StatusWrite's `status` left as JSON text.

The decider writes a Job's whole status with every change: 29% of a log's events and
half its bytes. No projection reads it (the store keeps each event's bytes, the folded
history takes nothing from a StatusWrite), so decoding it into objects was a third of a
rebuild's decoding. Here `status` is a `msgspec.Raw`: still checked to be well-formed
JSON, its values not built. Every other event is decoded as `lavalog.events.codec` does, and
encoding either kind gives the bytes back as they were (`encode(event)` of the live
stream). Code that reads a status (the audit, the decider) decodes with `lavalog.events.codec`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Union, cast, get_args

import msgspec

from lavalog.events.codec import DecodeError, LogEvent
from lavalog.events.decisions import AnyDecision, Decision
from lavalog.events.decisions import StatusWrite as FullStatusWrite
from lavalog.events.observations import AnyObservation


class StatusWrite(Decision, frozen=True, kw_only=True, tag="StatusWrite"):
    """`events.decisions.StatusWrite` with its status undecoded."""

    status: msgspec.Raw


_kinds = [
    *get_args(AnyObservation),
    *(kind for kind in get_args(AnyDecision) if kind is not FullStatusWrite),
    StatusWrite,
]
_decoder: msgspec.json.Decoder[Any] = msgspec.json.Decoder(Union[tuple(_kinds)])  # noqa: UP007


def decode_event(data: bytes) -> LogEvent:
    """An observation or a decision; a StatusWrite is this module's (its status as JSON)."""
    try:
        return cast(LogEvent, _decoder.decode(data))
    except msgspec.DecodeError as exc:
        raise DecodeError(str(exc)) from exc


def decode_events(data: Iterable[bytes]) -> list[LogEvent]:
    """`decode_event` of each (in one loop without a call of ours per event: a rebuild
    decodes a million); the first that is no event raises."""
    decode = _decoder.decode
    try:
        return [decode(event) for event in data]
    except msgspec.DecodeError as exc:
        raise DecodeError(str(exc)) from exc
