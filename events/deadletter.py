"""`lavalog.deadletter`: messages a consumer could not process, with the reason.

The partition they came from goes on; an operator can inspect, fix and re-publish them.
"""

from __future__ import annotations

import msgspec


class DeadLetter(msgspec.Struct, frozen=True, kw_only=True):
    topic: str
    partition: int
    offset: int
    #: who gave up on it: "decider", "actuator", "projections"
    consumer: str
    error: str
    #: the original message, decoded as UTF-8 with replacement characters where it was not
    value: str
    key: str | None = None


def encode_dead_letter(letter: DeadLetter) -> bytes:
    return msgspec.json.encode(letter)
