"""Label and field selectors, parsed once per request into a predicate over objects.

Label selectors support the equality (`a=b`, `a==b`, `a!=b`) and set-based (`a in (x,y)`,
`a notin (x)`, `a`, `!a`) forms; field selectors support `=`, `==` and `!=` over the
fields each kind declares in the registry, and reject the others as the API does.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from lavalog.simulator.errors import bad_request

Obj = dict[str, Any]

_SET_RE = re.compile(r"^\s*(!?)\s*([A-Za-z0-9_./-]+)\s*(?:(in|notin)\s*\((.*)\))?\s*$")
_EQ_RE = re.compile(r"^\s*([A-Za-z0-9_./-]+)\s*(==|=|!=)\s*([A-Za-z0-9_./-]*)\s*$")
#: a field's value is any text but the operators' characters (apimachinery's fields
#: selector: `spec.containers{main}` is a value, as a Pod's Events name their container)
_FIELD_RE = re.compile(r"^\s*([A-Za-z0-9_./-]+)\s*(==|=|!=)\s*([^=!]*?)\s*$")


@dataclass(frozen=True, slots=True)
class Requirement:
    """One term of a selector: `key op values`."""

    key: str
    op: str  # "in", "notin", "exists", "!exists"
    values: frozenset[str] = frozenset()

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.op == "exists":
            return self.key in labels
        if self.op == "!exists":
            return self.key not in labels
        if self.op == "in":
            return labels.get(self.key) in self.values
        # notin: as in Kubernetes, a missing key satisfies `notin` and `!=`.
        return labels.get(self.key) not in self.values

    @property
    def equality(self) -> tuple[str, str] | None:
        """The (key, value) pair an index can answer, if this term pins one value."""
        if self.op == "in" and len(self.values) == 1:
            return (self.key, next(iter(self.values)))
        return None


def _split_terms(text: str) -> list[str]:
    """Split on commas outside parentheses."""
    terms: list[str] = []
    depth = 0
    current: list[str] = []
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char == "," and depth == 0:
            terms.append("".join(current))
            current = []
        else:
            current.append(char)
    terms.append("".join(current))
    return [t for t in terms if t.strip()]


def parse_labels(text: str | None) -> tuple[Requirement, ...]:
    if not text:
        return ()
    out: list[Requirement] = []
    for term in _split_terms(text):
        eq = _EQ_RE.match(term)
        if eq:
            key, op, value = eq.groups()
            out.append(Requirement(key, "notin" if op == "!=" else "in", frozenset({value})))
            continue
        st = _SET_RE.match(term)
        if not st:
            raise bad_request(f"unable to parse requirement: {term!r}")
        negate, key, op, values = st.groups()
        if op is None:
            out.append(Requirement(key, "!exists" if negate else "exists"))
        elif negate:
            raise bad_request(f"unable to parse requirement: {term!r}")
        else:
            parsed = frozenset(v.strip() for v in values.split(",") if v.strip())
            out.append(Requirement(key, op, parsed))
    return tuple(out)


def _event_source(event: Obj) -> str:
    """An Event's `source` field: its source's component, else its reporting controller
    (kube-apiserver's event `ToSelectableFields`), so that events.k8s.io writers match too."""
    return (event.get("source") or {}).get("component") or event.get("reportingComponent") or ""


#: fields a selector reads from more than the path they are named by
_DERIVED_FIELDS: dict[str, Callable[[Obj], str]] = {"source": _event_source}


def field_value(obj: Obj, path: str) -> str:
    derived = _DERIVED_FIELDS.get(path)
    if derived is not None:
        return derived(obj)
    node: Any = obj
    for part in path.split("."):
        if not isinstance(node, dict):
            return ""
        node = node.get(part)
    return "" if node is None else str(node)


def parse_fields(text: str | None, allowed: frozenset[str]) -> tuple[tuple[str, bool, str], ...]:
    """Parse into (field, wanted_equal, value) terms; unknown fields are a 400 as on the API."""
    if not text:
        return ()
    out: list[tuple[str, bool, str]] = []
    for term in _split_terms(text):
        eq = _FIELD_RE.match(term)
        if not eq:
            raise bad_request(f"invalid field selector: {term!r}")
        field, op, value = eq.groups()
        if field not in allowed:
            raise bad_request(f'field label not supported: "{field}"')
        out.append((field, op != "!=", value))
    return tuple(out)


@dataclass(frozen=True, slots=True)
class Selector:
    """A parsed label and field selector; `matches` is the whole filter."""

    labels: tuple[Requirement, ...] = ()
    fields: tuple[tuple[str, bool, str], ...] = ()

    @property
    def empty(self) -> bool:
        return not self.labels and not self.fields

    def matches(self, obj: Obj) -> bool:
        if self.labels:
            labels = obj["metadata"].get("labels") or {}
            if not all(r.matches(labels) for r in self.labels):
                return False
        return all((field_value(obj, f) == v) == want for f, want, v in self.fields)

    def index_terms(self) -> list[tuple[str, str]]:
        return [eq for r in self.labels if (eq := r.equality) is not None]


def parse(
    label_selector: str | None, field_selector: str | None, allowed_fields: frozenset[str]
) -> Selector:
    return Selector(parse_labels(label_selector), parse_fields(field_selector, allowed_fields))
