"""In-process writes that share the stored object's unchanged parts (`Objects.rewrite`,
the kubelet's and the schedulers' writes): validated, versioned and seen by watchers
like any other write, the stored versions left as they were."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from lavalog.simulator import registry
from lavalog.simulator.clock import SimClock
from lavalog.simulator.errors import ApiError
from lavalog.simulator.objects import Objects
from lavalog.simulator.store import Change, Store

Obj = dict[str, Any]


@pytest.fixture
def objects() -> Objects:
    found = Objects(Store(), SimClock())
    found.create(registry.NAMESPACE, "", {"metadata": {"name": "default"}})
    pod = {
        "metadata": {"name": "p", "labels": {"app": "a"}},
        "spec": {"containers": [{"name": "c", "image": "x"}]},
    }
    found.create(registry.POD, "default", pod)
    return found


def test_a_status_rewrite_keeps_all_but_the_status_as_stored(objects: Objects) -> None:
    before = objects.get(registry.POD, "default", "p")

    def build(stored: Obj) -> Obj:
        spec = {**stored["spec"], "nodeName": "elsewhere"}
        metadata = {**stored["metadata"], "labels": {"app": "b"}}
        return {**stored, "metadata": metadata, "spec": spec, "status": {"phase": "Running"}}

    after = objects.rewrite(registry.POD, "default", "p", build, subresource="status").obj
    assert after["status"] == {"phase": "Running"}
    assert after["spec"] == before["spec"] and "nodeName" not in after["spec"]
    assert after["metadata"]["labels"] == {"app": "a"}
    assert after["metadata"]["generation"] == before["metadata"]["generation"]
    assert int(after["metadata"]["resourceVersion"]) > int(before["metadata"]["resourceVersion"])


def test_what_a_rewrite_changed_is_validated(objects: Objects) -> None:
    def bind(stored: Obj) -> Obj:
        return {**stored, "spec": {**stored["spec"], "nodeName": 5}}

    with pytest.raises(ApiError) as refused:
        objects.rewrite(registry.POD, "default", "p", bind)
    assert refused.value.code == 400 and "spec.nodeName" in refused.value.message

    def unknown(stored: Obj) -> Obj:
        return {**stored, "status": {"phase": "Running", "mood": "happy"}}

    with pytest.raises(ApiError) as strict:
        objects.rewrite(registry.POD, "default", "p", unknown, subresource="status")
    assert 'unknown field "status.mood"' in strict.value.message


def test_a_rewrite_leaves_the_stored_versions_and_the_history_as_they_were(
    objects: Objects,
) -> None:
    changes: list[Change] = []
    objects.store.subscribe(changes.append)
    stored = objects.get(registry.POD, "default", "p")
    kept = copy.deepcopy(stored)

    def bind(old: Obj) -> Obj:
        return {**old, "spec": {**old["spec"], "nodeName": "n1"}}

    objects.rewrite(registry.POD, "default", "p", bind)
    assert stored == kept
    assert [(c.type, c.old == kept) for c in changes] == [("MODIFIED", True)]
    assert changes[0].entry.obj["spec"]["nodeName"] == "n1"
