"""How projections values look on the HTTP API: instants as RFC 3339 strings.

Inside, an instant is a float of seconds since the epoch (the log's clock, cheap to
compare and subtract). A field annotated `Time` is such an instant; on the API it becomes
an RFC 3339 string in UTC with microseconds (`2026-11-21T05:01:33.250000Z`), which every
client library parses and a person can read. Durations stay numbers of seconds. The
annotation also gives the field `format: date-time` in the OpenAPI document, so the
document and the conversion cannot disagree.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Annotated, Any, TypeVar

import msgspec
import msgspec.inspect as mi

from lavalog.events.timestamps import from_rfc3339

#: msgspec keeps the float's `"type": "number"`: the OpenAPI document makes it a string
TIME_SCHEMA: dict[str, Any] = {
    "format": "date-time",
    "description": "RFC 3339 in UTC with fractional seconds",
}

#: an instant: seconds since the epoch inside, an RFC 3339 string on the API
Time = Annotated[float, msgspec.Meta(extra_json_schema=TIME_SCHEMA)]

T = TypeVar("T")


def time_text(seconds: float) -> str:
    """`2026-11-21T05:01:33.250000Z`: RFC 3339, UTC, microseconds."""
    moment = datetime.fromtimestamp(seconds, UTC)
    return moment.isoformat(timespec="microseconds").replace("+00:00", "Z")


def to_wire(value: object, kind: Any) -> Any:
    """JSON-ready builtins of `value` (of type `kind`), its `Time` fields as text."""
    return _convert(msgspec.to_builtins(value), _type_info(kind), time_text)


def from_wire(data: Any, kind: type[T]) -> T:
    """The value of type `kind` that `to_wire` gave `data` for (an API answer, decoded)."""
    return msgspec.convert(_convert(data, _type_info(kind), _seconds), kind)


#: `msgspec.inspect.type_info` of each type converted so far
_TYPE_INFO: dict[Any, mi.Type] = {}


def _type_info(kind: Any) -> mi.Type:
    """`msgspec.inspect.type_info`, once per type: it walks every annotation of the
    type's structs, which took most of a job page answer's time."""
    info = _TYPE_INFO.get(kind)
    if info is None:
        info = _TYPE_INFO[kind] = mi.type_info(kind)
    return info


def _seconds(text: object) -> float:
    if not isinstance(text, str):
        raise msgspec.ValidationError(f"expected an RFC 3339 time, not {text!r}")
    try:
        return from_rfc3339(text)
    except ValueError:
        raise msgspec.ValidationError(f"expected an RFC 3339 time, not {text!r}") from None


def _is_time(kind: mi.Type) -> bool:
    return isinstance(kind, mi.Metadata) and kind.extra_json_schema == TIME_SCHEMA


def _convert(data: Any, kind: mi.Type, change: Callable[[Any], Any]) -> Any:
    """`data` with `change` applied to every value that `kind` says is a `Time`."""
    if data is None:
        return None
    if _is_time(kind):
        return change(data)
    if isinstance(kind, mi.Metadata):
        return _convert(data, kind.type, change)
    if isinstance(kind, mi.UnionType):
        others = [t for t in kind.types if not isinstance(t, mi.NoneType)]
        return _convert(data, others[0], change) if len(others) == 1 else data
    if isinstance(kind, mi.StructType) and isinstance(data, dict):
        for field in kind.fields:
            if field.encode_name in data:
                data[field.encode_name] = _convert(data[field.encode_name], field.type, change)
        return data
    if isinstance(kind, mi.ListType | mi.VarTupleType | mi.SetType | mi.FrozenSetType):
        return [_convert(item, kind.item_type, change) for item in data]
    if isinstance(kind, mi.TupleType):
        return [_convert(item, t, change) for item, t in zip(data, kind.item_types, strict=False)]
    if isinstance(kind, mi.DictType) and isinstance(data, dict):
        return {key: _convert(item, kind.value_type, change) for key, item in data.items()}
    return data
