"""The changes a list or a watch brings, understood without I/O.

A watch line is an ADDED/MODIFIED/DELETED change, a BOOKMARK (the position only) or an
ERROR (410 Gone: list again; anything else: retry); a relist is compared with what was
known. The service (`lavalog.controller.watchers.service.watch`) reads the lines and feeds them
here, so these rules are tested line by line without a server.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

import msgspec
import structlog

from lavalog.controller.watchers.core.objects import KubeObject, Status, WatchEvent

log = structlog.get_logger("lavalog.watchers")

T = TypeVar("T", bound=KubeObject)


class ChangeType(enum.StrEnum):
    ADDED = "ADDED"
    MODIFIED = "MODIFIED"
    DELETED = "DELETED"


@dataclass(frozen=True, slots=True)
class Change(Generic[T]):
    type: ChangeType
    #: the object after the change; for DELETED, its last state
    obj: T


class Gone(Exception):
    """410: the resourceVersion is older than the server's history; list again."""


class WatchError(Exception):
    """An ERROR event other than 410."""


def relisted(known: Mapping[str, T], listed: Iterable[T]) -> list[Change[T]]:
    """What changed between the objects `known` (by uid) and a fresh list of them."""
    present: dict[str, T] = {obj.metadata.uid: obj for obj in listed}
    changes = [Change(ChangeType.DELETED, obj) for uid, obj in known.items() if uid not in present]
    for uid, obj in present.items():
        old = known.get(uid)
        if old is None:
            changes.append(Change(ChangeType.ADDED, obj))
        elif old.metadata.resource_version != obj.metadata.resource_version:
            changes.append(Change(ChangeType.MODIFIED, obj))
    return changes


def remember(known: dict[str, T], changes: Iterable[Change[T]]) -> None:
    for change in changes:
        if change.type is ChangeType.DELETED:
            known.pop(change.obj.metadata.uid, None)
        else:
            known[change.obj.metadata.uid] = change.obj


_event_decoder = msgspec.json.Decoder(WatchEvent)
#: a watch line's type to its change: a lookup, where `__members__` and `ChangeType(...)`
#: took 0.7 µs a line
_CHANGE_TYPES = {change.value: change for change in ChangeType}


_status_decoder = msgspec.json.Decoder(Status)
_bookmark_decoder = msgspec.json.Decoder(KubeObject)


@dataclass(slots=True)
class Parsed(Generic[T]):
    """One batch of watch lines, understood."""

    changes: list[Change[T]]
    #: the last resourceVersion seen (objects and bookmarks), or "" for none
    resource_version: str
    #: what ended the stream, raised once the changes before it are consumed
    error: Exception | None = None


def parse(lines: Sequence[bytes], decoder: msgspec.json.Decoder[T]) -> Parsed[T]:
    """Watch lines to changes: bookmarks only move the position, an ERROR ends the batch."""
    parsed: Parsed[T] = Parsed([], "")
    for line in lines:
        event = _event_decoder.decode(line)
        if event.type == "BOOKMARK":
            parsed.resource_version = _bookmark_decoder.decode(
                event.object
            ).metadata.resource_version
        elif event.type == "ERROR":
            status = _status_decoder.decode(event.object)
            text = f"{status.code} {status.reason}: {status.message}"
            parsed.error = Gone(text) if status.code == 410 else WatchError(text)
            break
        elif (change_type := _CHANGE_TYPES.get(event.type)) is not None:
            obj = decode_or_skip(decoder, event.object)
            if obj is None:
                parsed.resource_version = _version_of(event.object) or parsed.resource_version
                continue
            parsed.changes.append(Change(change_type, obj))
            parsed.resource_version = obj.metadata.resource_version
        else:
            log.warning("unknown watch event", type=event.type)
    return parsed


def decode_or_skip(decoder: msgspec.json.Decoder[T], raw: bytes | msgspec.Raw) -> T | None:
    """The object, or None (logged) when it is not a well-formed object of its kind."""
    try:
        return decoder.decode(raw)
    except msgspec.DecodeError as exc:
        log.error(
            "undecodable object skipped",
            error=str(exc),
            object=bytes(raw)[:500].decode(errors="replace"),
        )
        return None


class _VersionOnly(msgspec.Struct, frozen=True, rename="camel"):
    resource_version: str = ""


class _Versioned(msgspec.Struct, frozen=True):
    metadata: _VersionOnly = _VersionOnly()


_version_decoder = msgspec.json.Decoder(_Versioned)


def _version_of(raw: msgspec.Raw) -> str:
    """The resourceVersion of an object that did not decode, if it has a readable one."""
    try:
        return _version_decoder.decode(raw).metadata.resource_version
    except msgspec.DecodeError:
        return ""
