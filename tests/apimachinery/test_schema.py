"""The structural walk over an update: what the new object shares with the stored one is
not walked again, what it changed is pruned, defaulted and checked as on a create."""

from __future__ import annotations

import copy
from typing import Any

from lavalog.apimachinery import schema

SCHEMA: schema.Schema = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "properties": {
                "replicas": {"type": "integer", "minimum": 0},
                "mode": {"type": "string", "default": "fast"},
            },
        },
        "status": {
            "type": "object",
            "properties": {
                "phase": {"type": "string", "enum": ["Pending", "Running"]},
                "hosts": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {"name": {"type": "string"}, "cores": {"type": "integer"}},
                    },
                },
            },
        },
    },
}


class Untouchable(dict[str, Any]):
    """A stored part that fails the test if the walk looks into it again."""

    def __iter__(self) -> Any:
        raise AssertionError("a part shared with the stored object was walked again")


def stored_object() -> dict[str, Any]:
    obj: dict[str, Any] = {
        "spec": {"replicas": 2},
        "status": {"phase": "Pending", "hosts": [{"name": "a", "cores": 1}]},
    }
    assert schema.apply(SCHEMA, obj) == schema.Findings()
    return obj


def test_a_part_shared_with_the_stored_object_is_not_walked_again() -> None:
    stored = stored_object()
    stored["spec"] = Untouchable(stored["spec"])
    new = {**stored, "status": {"phase": "Running", "hosts": stored["status"]["hosts"]}}
    assert schema.apply(SCHEMA, new, stored=stored) == schema.Findings()
    assert new["spec"] is stored["spec"]


def test_what_an_update_changed_is_checked_beside_what_it_shares() -> None:
    stored = stored_object()
    host = stored["status"]["hosts"][0]
    status = {"phase": "Exploded", "hosts": [host, {"name": "b", "cores": "two", "gpus": 1}]}
    new = {**stored, "status": status, "spec": {**stored["spec"], "mode": None}}
    findings = schema.apply(SCHEMA, new, stored=stored)
    assert [c.field for c in findings.invalid] == ["status.phase", "status.hosts[1].cores"]
    assert [u.path for u in findings.unknown] == ["status.hosts[1].gpus"]
    assert new["spec"] == {"replicas": 2, "mode": "fast"}  # null dropped, then defaulted
    assert new["status"]["hosts"][0] is host


def test_an_equal_copy_is_walked_as_a_new_value() -> None:
    """Only the very object stored is taken as checked: an equal copy may differ in what
    Python's equality hides (True == 1), so it is walked."""
    stored = stored_object()
    new = copy.deepcopy(stored)
    new["spec"]["replicas"] = True
    findings = schema.apply(SCHEMA, new, stored=stored)
    assert [c.field for c in findings.invalid] == ["spec.replicas"]


def test_scalars_are_held_to_their_type_beside_those_taken_as_they_are() -> None:
    """Most values are scalars of the right type, which the walk passes without a look;
    the others still meet their node's type, int-or-string and checks."""
    scalars: schema.Schema = {
        "type": "object",
        "properties": {
            "count": {"type": "integer"},
            "ratio": {"type": "number"},
            "port": {"x-kubernetes-int-or-string": True},
            "flags": {"type": "array", "items": {"type": "boolean"}},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "size": {"type": "string", "maxLength": 2},
        },
    }
    fine = {"count": 2.0, "ratio": 1, "port": "http", "flags": [True], "labels": {"a": "b"}}
    assert schema.apply(scalars, fine) == schema.Findings()
    wrong = {
        "count": True,
        "ratio": "1",
        "port": False,
        "flags": [True, 1],
        "labels": {"a": "b", "c": 3},
        "size": "big",
    }
    findings = schema.apply(scalars, wrong)
    assert [c.field for c in findings.invalid] == [
        "count",
        "ratio",
        "port",
        "flags[1]",
        "labels[c]",
        "size",
    ]
