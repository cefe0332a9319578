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
#: the stored counterpart of a value that has none, and of an object's members when it
#: has none
_UNSTORED = object()
_NOTHING: dict[str, Any] = {}


def apply(
    schema: Schema, obj: dict[str, Any], *, defaults: bool = True, stored: Any = None
) -> Findings:
    """Prune, default and check `obj` against `schema`, in place.

    `stored`: the object this one replaces, as it was stored after this same walk (an
    update). A value of `obj` that *is* the value at the same place in `stored` (the same
    Python object, shared rather than copied) is left alone: it was pruned, defaulted and
    checked against the same schema node when stored, so walking it again would find and
    change nothing. A status write that keeps the stored spec (`ValidatePodStatusUpdate`
    does not look at the spec either) costs only the walk of what it changed.
    """
    findings = Findings()
    _walk(_compiled(schema), obj, None, findings, defaults, _UNSTORED if stored is None else stored)
    return findings


#: where a value sits, built as the walk descends and spelled out (`_spell`) only for a
#: finding: (parent, property name) for a member, (parent, index) for an array item,
#: (parent, key, None) for a map value; None for the object itself
_Path = tuple[Any, ...] | None


def _spell(path: _Path) -> str:
    """`spec.tasks[0].template`, `metadata.labels[app]`: the field path of a `field.Error`."""
    parts: list[str] = []
    while path is not None:
        step = path[1]
        if isinstance(step, int) or len(path) == 3:
            parts.append(f"[{step}]")
        else:
            parts.append(f".{step}")
        path = path[0]
    return "".join(reversed(parts)).removeprefix(".")


_CHECKS = (
    "enum",
    "minimum",
    "maximum",
    "maxLength",
    "minLength",
    "pattern",
    "minItems",
    "maxItems",
)


class _Node:
    """One schema node with what the walk asks of it looked up once: a written object
    passes hundreds of nodes, and the same schema is applied to every write of its kind.
    Children are compiled when first reached (schemas can be recursive)."""

    __slots__ = (
        "_extra",
        "_items",
        "checked",
        "defaults",
        "int_or_string",
        "keep_unknown",
        "kind",
        "members",
        "nullable",
        "opaque",
        "plain",
        "properties",
        "required",
        "schema",
        "settled",
        "types",
    )

    def __init__(self, schema: Schema) -> None:
        self.schema = schema
        self.kind: str | None = schema.get("type")
        self.types = _TYPES.get(self.kind, (object,)) if self.kind is not None else None
        self.nullable = bool(schema.get("nullable"))
        self.int_or_string = bool(schema.get("x-kubernetes-int-or-string"))
        preserve = bool(schema.get("x-kubernetes-preserve-unknown-fields"))
        self.properties: dict[str, Schema] = schema.get("properties") or {}
        self.opaque = preserve and "properties" not in schema
        extra = schema.get("additionalProperties")
        self.keep_unknown = preserve or extra is True
        self.required: tuple[str, ...] = tuple(schema.get("required") or ())
        self.defaults = tuple(
            (name, sub["default"]) for name, sub in self.properties.items() if "default" in sub
        )
        self.checked = any(check in schema for check in _CHECKS)
        #: the exact types `has` accepts at once (it looks twice at a float that may be a
        #: whole number, a bool where a number is asked, a subclass)
        self.plain = frozenset(_TYPES.get(self.kind, ())) if self.kind is not None else frozenset()
        #: the exact types of a value the walk has nothing to do with here (a scalar of the
        #: right type, without checks): left without a call, as most values of a write are
        self.settled = frozenset() if self.checked else _settled(self.kind, self.int_or_string)
        #: the nodes of the properties reached so far (`member` compiles the others)
        self.members: dict[str, _Node] = {}
        self._extra: _Node | None = None
        self._items: _Node | None = None

    def member(self, name: str) -> _Node | None:
        """The node of property `name`, None if the schema has no such property."""
        node = self.members.get(name)
        if node is None and name in self.properties:
            node = self.members[name] = _Node(self.properties[name])
        return node

    @property
    def extra(self) -> _Node | None:
        """The node of a map's values (`additionalProperties` given as a schema)."""
        extra = self.schema.get("additionalProperties")
        if self._extra is None and isinstance(extra, dict):
            self._extra = _Node(extra)
        return self._extra

    @property
    def items(self) -> _Node:
        """The node of an array's items."""
        if self._items is None:
            self._items = _Node(self.schema.get("items") or {})
        return self._items

    def has(self, value: Any) -> bool:
        """Whether `value` is of this node's `type` (a bool is no number; 2.0 is an integer)."""
        if self.types is None:
            return True
        if isinstance(value, bool) and self.kind in ("integer", "number"):
            return False
        if self.kind == "integer" and isinstance(value, float):
            return value.is_integer()
        return isinstance(value, self.types)


_SCALARS = frozenset({str, bool, int, float})


def _settled(kind: str | None, int_or_string: bool) -> frozenset[type]:
    if int_or_string:
        return frozenset({int, str})
    if kind is None:
        return _SCALARS
    return frozenset(_TYPES.get(kind, ())) & _SCALARS


#: compiled schemas by identity; the schemas applied are built once and never changed
#: (`kube_schema.of`, `crds.object_schema`), and an entry keeps its schema alive, so an
#: id is not reused while it is here
_NODES: dict[int, _Node] = {}


def _compiled(schema: Schema) -> _Node:
    node = _NODES.get(id(schema))
    if node is None or node.schema is not schema:
        node = _NODES[id(schema)] = _Node(schema)
    return node


def _object_member(
    node: _Node,
    sub: _Node | None,
    obj: dict[str, Any],
    name: str,
    path: _Path,
    findings: Findings,
    defaults: bool,
    stored: Any,
) -> None:
    """Walk member `name` of `obj`; `sub`: its property's node, None if it has none."""
    if sub is not None:
        where: _Path = (path, name)
    elif node.extra is not None:
        sub, where = node.extra, (path, name, None)
        if type(obj[name]) in sub.settled:
            return
    elif node.keep_unknown:
        return
    else:
        findings.unknown.append(UnknownField(_spell((path, name)), name, tuple(node.properties)))
        del obj[name]
        return
    value = _walk(sub, obj[name], where, findings, defaults, stored)
    if value is _DROP:
        del obj[name]
    else:
        obj[name] = value


def _walk(
    node: _Node, value: Any, path: _Path, findings: Findings, defaults: bool, stored: Any
) -> Any:
    """`stored`: the value at the same place in the stored object (see `apply`), or
    `_UNSTORED`."""
    if value is None:
        return None if node.nullable else _DROP
    if node.int_or_string:
        if isinstance(value, bool) or not isinstance(value, int | str):
            findings.invalid.append(_type_error(path, value, "integer or string"))
        return value
    if node.kind is not None and type(value) not in node.plain and not node.has(value):
        findings.invalid.append(_type_error(path, value, node.kind))
        return value
    if isinstance(value, dict):
        if node.opaque:
            return value
        before = stored if isinstance(stored, dict) else _NOTHING
        members = node.members
        for name in list(value):
            member = value[name]
            kept = before.get(name, _UNSTORED)
            if member is kept:
                continue
            sub = members.get(name) or node.member(name)
            if sub is None or type(member) not in sub.settled:
                _object_member(node, sub, value, name, path, findings, defaults, kept)
        if defaults:
            for name, default in node.defaults:
                if name not in value:
                    value[name] = copy.deepcopy(default)
        for name in node.required:
            if name not in value:
                findings.invalid.append(
                    Cause("FieldValueRequired", _spell((path, name)), "Required value")
                )
    elif isinstance(value, list):
        items = node.items
        settled = items.settled
        kept_items = stored if isinstance(stored, list) else ()
        for i, item in enumerate(value):
            kept = kept_items[i] if i < len(kept_items) else _UNSTORED
            if item is kept or type(item) in settled:
                continue
            if item is None and not items.nullable:
                findings.invalid.append(_type_error((path, i), item, items.kind or "object"))
            else:
                value[i] = _walk(items, item, (path, i), findings, defaults, kept)
    if node.checked:
        _check_value(node.schema, value, path, findings)
    return value


def _check_value(schema: Schema, value: Any, path: _Path, findings: Findings) -> None:
    enum = schema.get("enum")
    if enum is not None and value not in enum:
        supported = ", ".join(json.dumps(v) for v in enum)
        findings.invalid.append(
            Cause(
                "FieldValueNotSupported",
                _spell(path),
                f"Unsupported value: {_show(value)}: supported values: {supported}",
            )
        )
        return
    problem = _bound_problem(schema, value)
    if problem:
        where = _spell(path)
        findings.invalid.append(
            Cause("FieldValueInvalid", where, f"Invalid value: {_show(value)}: {where} {problem}")
        )


def _bound_problem(schema: Schema, value: Any) -> str:
    """What is wrong with `value`, worded after its field path ("in body should ...")."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            return f"in body should be greater than or equal to {schema['minimum']}"
        if "maximum" in schema and value > schema["maximum"]:
            return f"in body should be less than or equal to {schema['maximum']}"
    elif isinstance(value, str):
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            return f"in body should be at most {schema['maxLength']} chars long"
        if "minLength" in schema and len(value) < schema["minLength"]:
            return f"in body should be at least {schema['minLength']} chars long"
        if "pattern" in schema and not _pattern(schema["pattern"]).search(value):
            return f"in body should match '{schema['pattern']}'"
    elif isinstance(value, list):
        if "minItems" in schema and len(value) < schema["minItems"]:
            return f"in body should have at least {schema['minItems']} items"
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            return f"in body should have at most {schema['maxItems']} items"
    return ""


@cache
def _pattern(text: str) -> re.Pattern[str]:
    return re.compile(text)


def _type_error(path: _Path, value: Any, kind: str) -> Cause:
    shown, where = _show(value), _spell(path)
    return Cause(
        "FieldValueTypeInvalid",
        where,
        f"Invalid value: {shown}: {where} in body must be of type {kind}: {shown}",
    )


def _show(value: Any) -> str:
    if isinstance(value, dict):
        return '"object"'
    if isinstance(value, list):
        return '"array"'
    if value is None:
        return '"null"'
    return json.dumps(value)
