"""Broken objects in a watch stream or a list page: the watcher skips each one that does
not decode as its kind, keeps every other, and moves its position past them all (before
this, one bad object made the watch retry the same resourceVersion forever)."""

from __future__ import annotations

from typing import Any

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from lavalog.controller.watchers.core import changes
from lavalog.controller.watchers.core.objects import List
from lavalog.controller.watchers.service import watch
from tests.fuzz.objects import base_command, base_job, base_pod, base_podgroup, broken

KINDS: dict[str, tuple[watch.Resource[Any], dict[str, Any]]] = {
    "jobs": (watch.JOBS, base_job("j")),
    "pods": (watch.PODS, base_pod("p", "j")),
    "podgroups": (watch.PODGROUPS, base_podgroup("g", "j")),
    "commands": (watch.COMMANDS, base_command("c", "j")),
}


def stream(data: st.DataObject, base: dict[str, Any]) -> list[dict[str, Any]]:
    """Objects, some broken, with resourceVersions 1, 2, 3... in order."""
    objects = data.draw(st.lists(st.one_of(st.just(base), broken(base)), min_size=1, max_size=8))
    for number, obj in enumerate(objects, start=1):
        meta = obj.setdefault("metadata", {"name": "x", "namespace": "default"})
        meta["resourceVersion"] = str(number)
    return objects


def decodes(resource: watch.Resource[Any], obj: dict[str, Any]) -> bool:
    try:
        msgspec.json.Decoder(resource.type).decode(msgspec.json.encode(obj))
    except msgspec.DecodeError:
        return False
    return True


@settings(max_examples=200, deadline=None)
@given(kind=st.sampled_from(sorted(KINDS)), data=st.data())
def test_a_watch_batch_keeps_every_good_object_and_moves_past_the_bad(
    kind: str, data: st.DataObject
) -> None:
    resource, base = KINDS[kind]
    objects = stream(data, base)
    lines = [msgspec.json.encode({"type": "MODIFIED", "object": obj}) for obj in objects]

    parsed = changes.parse(lines, msgspec.json.Decoder(resource.type))

    good = [o for o in objects if decodes(resource, o)]
    assert [c.obj.metadata.resource_version for c in parsed.changes] == [
        o["metadata"]["resourceVersion"] for o in good
    ]
    assert parsed.resource_version == str(len(objects))
    assert parsed.error is None


class _Pages:
    """A Kube stand-in that answers one list request with one page (pure: no I/O)."""

    def __init__(self, page: bytes) -> None:
        self.page = page

    async def request(self, *args: Any, **kwargs: Any) -> bytes:
        return self.page


@settings(max_examples=100, deadline=None)
@given(kind=st.sampled_from(sorted(KINDS)), data=st.data())
async def test_a_list_page_keeps_every_good_object(kind: str, data: st.DataObject) -> None:
    resource, base = KINDS[kind]
    objects = stream(data, base)
    page = msgspec.json.encode({"metadata": {"resourceVersion": "99"}, "items": objects})
    decoder = msgspec.json.Decoder(List[resource.type])  # type: ignore[name-defined]

    items, version = await watch.list_all(
        _Pages(page),  # type: ignore[arg-type]
        resource,
        None,
        watch.WatchSettings(),
        decoder,
    )

    assert [i.metadata.resource_version for i in items] == [
        o["metadata"]["resourceVersion"] for o in objects if decodes(resource, o)
    ]
    assert version == "99"
