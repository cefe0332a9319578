"""Structural schemas applied to a request body, as the API server applies them.

One walk does what a real API server does to a written object before storing it:

- prunes unknown fields (a custom resource by its CRD's structural schema, a core kind
  by its Go type, here its kubernetes-asyncio model) and reports them, so the caller can
  warn (`fieldValidation=Warn`, the default), reject (`Strict`) or stay silent
  (`Ignore`), or, before anything is submitted, name the field a typo meant
  (`lavalog validate`);
- drops `null` where the schema does not say `nullable`;
- fills in `default`s;
- collects invalid values (type, enum, bounds, pattern, required) with their field
  paths, in the wording of the API server's `field.Error`s.

Pure: no I/O, no knowledge of HTTP; the simulated API server turns the findings into
answers (`simulator/fields.py`).
"""

from __future__ import annotations

import copy
import difflib
import json
import re
from dataclasses import dataclass, field
from functools import cache
from typing import Any

Schema = dict[str, Any]

_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "boolean": (bool,),
    "integer": (int,),
    "number": (int, float),
}


@dataclass(frozen=True, slots=True)
class Cause:
    """One invalid value: a `details.causes[]` entry of a 422 Invalid answer."""

    reason: str  # FieldValueInvalid, FieldValueTypeInvalid, FieldValueNotSupported, ...
    field: str
    detail: str  # "Invalid value: ...", "Required value", ...

    @property
    def message(self) -> str:
        return f"{self.field}: {self.detail}"


@dataclass(frozen=True, slots=True)
class UnknownField:
    """A field the schema does not have, which the API server prunes: its path, and the
    names the schema has beside it."""

    path: str
    name: str
    known: tuple[str, ...] = ()

    @property
    def close(self) -> tuple[str, ...]:
        """The known names closest to it: what a typo (`maxRetrys`) probably meant."""
        return tuple(difflib.get_close_matches(self.name, self.known, n=2, cutoff=0.7))


@dataclass(slots=True)
class Findings:
    """What a walk found besides the cleaned object."""

    unknown: list[UnknownField] = field(default_factory=list)
    invalid: list[Cause] = field(default_factory=list)


class _Drop:
    """Marks a value the walk removes (a null that is not nullable)."""


_DROP = _Drop()


def apply(schema: Schema, obj: dict[str, Any], *, defaults: bool = True) -> Findings:
    """Prune, default and check `obj` against `schema`, in place."""
    findings = Findings()
    _walk(schema, obj, "", findings, defaults)
    return findings


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _object_member(
    schema: Schema, obj: dict[str, Any], name: str, path: str, findings: Findings, defaults: bool
) -> None:
    properties = schema.get("properties") or {}
    extra = schema.get("additionalProperties")
    if name in properties:
        sub, where = properties[name], _join(path, name)
    elif isinstance(extra, dict):
        sub, where = extra, f"{path}[{name}]"
    elif schema.get("x-kubernetes-preserve-unknown-fields") or extra is True:
        return
    else:
        findings.unknown.append(UnknownField(_join(path, name), name, tuple(properties)))
        del obj[name]
        return
    value = _walk(sub, obj[name], where, findings, defaults)
    if value is _DROP:
        del obj[name]
    else:
        obj[name] = value


def _walk(schema: Schema, value: Any, path: str, findings: Findings, defaults: bool) -> Any:
    if value is None:
        return None if schema.get("nullable") else _DROP
    if schema.get("x-kubernetes-int-or-string"):
        if isinstance(value, bool) or not isinstance(value, int | str):
            findings.invalid.append(_type_error(path, value, "integer or string"))
        return value
    kind = schema.get("type")
    if kind is not None and not _is(kind, value):
        findings.invalid.append(_type_error(path, value, kind))
        return value
    if isinstance(value, dict):
        if schema.get("x-kubernetes-preserve-unknown-fields") and "properties" not in schema:
            return value
        for name in list(value):
            _object_member(schema, value, name, path, findings, defaults)
        if defaults:
            _defaults(schema, value)
        for name in schema.get("required") or ():
            if name not in value:
                findings.invalid.append(
                    Cause("FieldValueRequired", _join(path, name), "Required value")
                )
    elif isinstance(value, list):
        items = schema.get("items") or {}
        for i, item in enumerate(value):
            where = f"{path}[{i}]"
            if item is None and not items.get("nullable"):
                findings.invalid.append(_type_error(where, item, items.get("type", "object")))
            else:
                value[i] = _walk(items, item, where, findings, defaults)
    _check_value(schema, value, path, findings)
    return value


def _is(kind: str, value: Any) -> bool:
    if isinstance(value, bool) and kind in ("integer", "number"):
        return False
    if kind == "integer" and isinstance(value, float):
        return value.is_integer()
    return isinstance(value, _TYPES.get(kind, (object,)))


def _defaults(schema: Schema, obj: dict[str, Any]) -> None:
    for name, sub in (schema.get("properties") or {}).items():
        if name not in obj and "default" in sub:
            obj[name] = copy.deepcopy(sub["default"])


def _check_value(schema: Schema, value: Any, path: str, findings: Findings) -> None:
    enum = schema.get("enum")
    if enum is not None and value not in enum:
        supported = ", ".join(json.dumps(v) for v in enum)
        findings.invalid.append(
            Cause(
                "FieldValueNotSupported",
                path,
                f"Unsupported value: {_show(value)}: supported values: {supported}",
            )
        )
        return
    problem = _bound_problem(schema, value, path)
    if problem:
        findings.invalid.append(
            Cause("FieldValueInvalid", path, f"Invalid value: {_show(value)}: {problem}")
        )


def _bound_problem(schema: Schema, value: Any, path: str) -> str:
    if isinstance(value, int | float) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            return f"{path} in body should be greater than or equal to {schema['minimum']}"
        if "maximum" in schema and value > schema["maximum"]:
            return f"{path} in body should be less than or equal to {schema['maximum']}"
    elif isinstance(value, str):
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            return f"{path} in body should be at most {schema['maxLength']} chars long"
        if "minLength" in schema and len(value) < schema["minLength"]:
            return f"{path} in body should be at least {schema['minLength']} chars long"
        if "pattern" in schema and not _pattern(schema["pattern"]).search(value):
            return f"{path} in body should match '{schema['pattern']}'"
    elif isinstance(value, list):
        if "minItems" in schema and len(value) < schema["minItems"]:
            return f"{path} in body should have at least {schema['minItems']} items"
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            return f"{path} in body should have at most {schema['maxItems']} items"
    return ""


@cache
def _pattern(text: str) -> re.Pattern[str]:
    return re.compile(text)


def _type_error(path: str, value: Any, kind: str) -> Cause:
    shown = _show(value)
    return Cause(
        "FieldValueTypeInvalid",
        path,
        f"Invalid value: {shown}: {path} in body must be of type {kind}: {shown}",
    )


def _show(value: Any) -> str:
    if isinstance(value, dict):
        return '"object"'
    if isinstance(value, list):
        return '"array"'
    if value is None:
        return '"null"'
    return json.dumps(value)
