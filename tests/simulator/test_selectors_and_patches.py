"""Selector parsing and the PATCH dialects, as tables (no cluster)."""

from __future__ import annotations

from typing import Any

import pytest

from lavalog.simulator import patch
from lavalog.simulator.errors import ApiError
from lavalog.simulator.selectors import parse

LABELS = {"app": "web", "tier": "front", "version": "v2"}


@pytest.mark.parametrize(
    ("selector", "matches"),
    [
        pytest.param("", True, id="empty"),
        pytest.param("app=web", True, id="eq"),
        pytest.param("app = web , tier==front", True, id="spaces-double-eq"),
        pytest.param("app!=web", False, id="neq"),
        pytest.param("missing!=x", True, id="neq-missing"),
        pytest.param("version in (v1, v2)", True, id="in"),
        pytest.param("version notin (v1,v2)", False, id="notin"),
        pytest.param("missing notin (a)", True, id="notin-missing"),
        pytest.param("tier,!missing", True, id="exists-and-not"),
        pytest.param("app=web,version in (v1)", False, id="conjunction"),
        pytest.param("example.com/team-a=x", False, id="prefixed-key"),
    ],
)
def test_label_selectors(selector: str, matches: bool) -> None:
    obj = {"metadata": {"name": "n", "labels": LABELS}}
    assert parse(selector, None, frozenset()).matches(obj) is matches


@pytest.mark.parametrize("bad", ["app in web", "!app in (a)", "a=b=c"])
def test_malformed_label_selectors_are_400(bad: str) -> None:
    with pytest.raises(ApiError) as info:
        parse(bad, None, frozenset())
    assert info.value.code == 400


def test_field_selectors() -> None:
    obj = {"metadata": {"name": "p", "namespace": "ns"}, "status": {"phase": "Running"}}
    allowed = frozenset({"metadata.name", "status.phase"})
    assert parse(None, "metadata.name=p,status.phase!=Failed", allowed).matches(obj)
    assert not parse(None, "status.phase=Pending", allowed).matches(obj)
    with pytest.raises(ApiError):
        parse(None, "spec.other=x", allowed)


@pytest.mark.parametrize(
    ("kind", "target", "body", "expected"),
    [
        pytest.param(patch.MERGE, {"a": {"b": 1, "c": 2}}, {"a": {"b": None, "d": 3}},
                     {"a": {"c": 2, "d": 3}}, id="merge-nested-delete"),
        pytest.param(patch.MERGE, {"l": [1, 2]}, {"l": [3]}, {"l": [3]}, id="merge-replaces-lists"),
        pytest.param(patch.STRATEGIC,
                     {"c": [{"name": "a", "image": "1", "x": 1}, {"name": "b", "image": "1"}]},
                     {"c": [{"name": "b", "image": "2"}], "$setElementOrder/c": [{"name": "a"}]},
                     {"c": [{"name": "a", "image": "1", "x": 1}, {"name": "b", "image": "2"}]},
                     id="strategic-merges-by-name"),
        pytest.param(patch.STRATEGIC, {"c": [{"name": "a"}, {"name": "b"}]},
                     {"c": [{"name": "a", "$patch": "delete"}]}, {"c": [{"name": "b"}]},
                     id="strategic-delete-directive"),
        pytest.param(patch.JSON_PATCH, {"a": [1, 2]},
                     [{"op": "add", "path": "/a/-", "value": 3}, {"op": "remove", "path": "/a/0"},
                      {"op": "replace", "path": "/b", "value": 1}],
                     None, id="json-patch-replace-missing-fails"),
        pytest.param(patch.JSON_PATCH, {"a": [1, 2], "m/k": {"x": 1}},
                     [{"op": "add", "path": "/a/-", "value": 3}, {"op": "remove", "path": "/a/0"},
                      {"op": "move", "from": "/m~1k", "path": "/n"},
                      {"op": "copy", "from": "/n", "path": "/o"}, {"op": "test", "path": "/o/x", "value": 1}],
                     {"a": [2, 3], "n": {"x": 1}, "o": {"x": 1}}, id="json-patch-ops"),
    ],
)  # fmt: skip
def test_patches(
    kind: str, target: dict[str, Any], body: Any, expected: dict[str, Any] | None
) -> None:
    if expected is None:
        with pytest.raises(ApiError) as info:
            patch.apply(kind, target, body)
        assert info.value.code == 422
    else:
        assert patch.apply(kind, target, body) == expected


def test_unknown_patch_type_is_415() -> None:
    with pytest.raises(ApiError) as info:
        patch.apply("application/apply-patch+yaml", {}, {})
    assert info.value.code == 415
