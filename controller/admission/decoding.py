"""Decode a user's raw `spec` into a JobSpec, reporting every type error with its path.

msgspec stops at the first error. To report them all, the offending value is taken out
(a field falls back to its default, a list item becomes an empty value of the expected
type) and decoding is retried, so one run names every wrong value of the document.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import msgspec

from lavalog.events.volcano.api import FieldError, JobSpec

#: more wrong values than this in one spec are not worth listing one by one
_MAX_ERRORS = 50
_MESSAGE = re.compile(r"^(?P<what>.*?)(?: - at `\$(?P<path>.*)`)?$", re.DOTALL)
_WRONG_TYPE = re.compile(r"Expected `(?P<expected>[^`]+)`, got `(?P<got>[^`]+)`")
_SEGMENT = re.compile(r"\.([^.\[]+)|\[(\d+|\.\.\.)\]")
_ANY_KEY = "..."

#: msgspec's type names -> how a message names them, the Python types they decode from,
#: and the empty value that stands in for a wrong list item on the next attempt
_TYPES: dict[str, tuple[str, tuple[type, ...], Any]] = {
    "int": ("an integer", (int,), 0),
    "float": ("a number", (float,), 0.0),
    "str": ("a string", (str,), ""),
    "bool": ("true or false", (bool,), False),
    "null": ("null", (type(None),), None),
    "array": ("a list", (list,), []),
    "object": ("a mapping", (dict,), {}),
}


class _MapKey(str):
    """A key of a map field (`plugins`), written `[key]` in paths rather than `.key`."""


_Segment = str | int


def decode_spec(raw: object) -> tuple[JobSpec | None, tuple[FieldError, ...]]:
    """The decoded spec, or None and every type error found."""
    data = _thaw(raw)
    errors: list[FieldError] = []
    for _ in range(_MAX_ERRORS):
        try:
            spec = msgspec.convert(data, JobSpec)
        except msgspec.ValidationError as exc:
            error, fixed = _explain(data, str(exc))
            errors.append(error)
            if not fixed:
                break
        else:
            return (None, tuple(errors)) if errors else (spec, ())
    return None, tuple(errors)


def _render_path(segments: list[_Segment]) -> str:
    """`spec.tasks[0].policies[1].exitCode`; map keys as `[key]`, as Kubernetes writes them."""
    text = "spec"
    for segment in segments:
        text += f"[{segment}]" if isinstance(segment, int | _MapKey) else f".{segment}"
    return text


def _thaw(raw: object) -> Any:
    """A private, mutable copy: the fix-ups below must not touch the caller's data. A null
    value in a mapping is left out, as Kubernetes reads `maxRetry: null` (or an empty YAML
    value) as unset."""
    if isinstance(raw, Mapping):
        return {key: _thaw(value) for key, value in raw.items() if value is not None}
    if isinstance(raw, list | tuple):
        return [_thaw(item) for item in raw]
    return raw


def _explain(data: Any, message: str) -> tuple[FieldError, bool]:
    """The FieldError for one msgspec message, and whether the value could be taken out."""
    parsed = _MESSAGE.match(message)
    assert parsed is not None  # the pattern matches any text
    what, raw_path = parsed["what"], parsed["path"] or ""
    wrong = _WRONG_TYPE.fullmatch(what)
    got = _TYPES.get(wrong["got"]) if wrong else None
    segments = _resolve(data, _parse(raw_path), got[1] if got else (object,))
    if segments is None:
        return FieldError("spec" + raw_path, what), False
    if wrong is None:
        return FieldError(_render_path(segments), what), False
    expected = " or ".join(_TYPES.get(name, (name,))[0] for name in wrong["expected"].split(" | "))
    value = _lookup(data, segments)
    error = FieldError(_render_path(segments), f"must be {expected}, not {value!r}")
    if not segments:
        return error, False
    parent, last = _lookup(data, segments[:-1]), segments[-1]
    if isinstance(parent, dict):
        del parent[last]
        return error, True
    first_expected = _TYPES.get(wrong["expected"].split(" | ")[0])
    if first_expected is None:
        return error, False
    parent[last] = _thaw(first_expected[2])
    return error, True


def _parse(raw_path: str) -> list[_Segment]:
    return [
        name if name else (_ANY_KEY if index == _ANY_KEY else int(index))
        for name, index in _SEGMENT.findall(raw_path)
    ]


def _resolve(data: Any, segments: list[_Segment], got: tuple[type, ...]) -> list[_Segment] | None:
    """`segments` with each map wildcard (`[...]`) replaced by the key whose value is wrong."""
    if not segments:
        return [] if isinstance(data, got) else None
    head, rest = segments[0], segments[1:]
    if head == _ANY_KEY and isinstance(data, dict):
        candidates: list[_Segment] = [_MapKey(key) for key in data]
    else:
        candidates = [head]
    for key in candidates:
        try:
            child = data[key]
        except (KeyError, IndexError, TypeError):
            continue
        tail = _resolve(child, rest, got)
        if tail is not None:
            return [key, *tail]
    return None


def _lookup(data: Any, segments: list[_Segment]) -> Any:
    for segment in segments:
        data = data[segment]
    return data
