"""Watch semantics: replay from a version, 410 Gone, bookmarks, timeouts, selector
transitions, and watchers that resume after a dropped watch or a 410 losing nothing."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import aiohttp
import pytest
from kubernetes_asyncio import watch
from kubernetes_asyncio.client import ApiClient
from kubernetes_asyncio.client.exceptions import ApiException

from lavalog.simulator import registry
from lavalog.simulator.selectors import parse
from lavalog.simulator.server import SimulatedCluster
from lavalog.simulator.store import Store
from lavalog.simulator.watch import WatchRequest, serve
from tests.simulator.kube import core_api, eventually, pod


async def raw_watch(cluster: SimulatedCluster, query: str, count: int) -> list[dict[str, Any]]:
    """Read `count` watch lines (or until the server ends the stream)."""
    url = f"{cluster.url}/api/v1/namespaces/default/pods?watch=true&{query}"
    events: list[dict[str, Any]] = []
    async with aiohttp.ClientSession() as session, session.get(url) as response:
        assert response.status == 200
        while len(events) < count:
            line = await asyncio.wait_for(response.content.readline(), 5)
            if not line:
                break
            events.append(json.loads(line))
    return events


def summary(events: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(e["type"], e["object"]["metadata"].get("name", "")) for e in events]


async def test_watch_from_version_replays_changes_with_objects_as_they_were(
    sim_cluster: SimulatedCluster, kube_api: ApiClient
) -> None:
    core = core_api(kube_api)
    start = await core.create_namespaced_pod("default", pod("a", {"v": "1"}))
    await core.patch_namespaced_pod("a", "default", {"metadata": {"labels": {"v": "2"}}})
    await core.create_namespaced_pod("default", pod("b"))
    await core.delete_namespaced_pod("a", "default")
    events = await raw_watch(sim_cluster, f"resourceVersion={start.metadata.resource_version}", 3)
    assert summary(events) == [("MODIFIED", "a"), ("ADDED", "b"), ("DELETED", "a")]
    assert events[0]["object"]["metadata"]["labels"] == {"v": "2"}
    versions = [int(e["object"]["metadata"]["resourceVersion"]) for e in events]
    assert versions == sorted(versions) and versions[0] > int(start.metadata.resource_version)


async def test_watch_without_version_starts_with_current_objects(
    sim_cluster: SimulatedCluster, kube_api: ApiClient
) -> None:
    core = core_api(kube_api)
    for name in ("a", "b"):
        await core.create_namespaced_pod("default", pod(name))
    events = await raw_watch(sim_cluster, "", 2)
    assert summary(events) == [("ADDED", "a"), ("ADDED", "b")]


async def test_expired_version_is_an_error_event_with_410(
    sim_cluster: SimulatedCluster, kube_api: ApiClient
) -> None:
    core = core_api(kube_api)
    old = await core.create_namespaced_pod("default", pod("a"))
    await core.create_namespaced_pod("default", pod("b"))
    sim_cluster.admin.expire_history()
    events = await raw_watch(sim_cluster, f"resourceVersion={old.metadata.resource_version}", 2)
    assert len(events) == 1 and events[0]["type"] == "ERROR"
    assert events[0]["object"]["code"] == 410 and events[0]["object"]["reason"] == "Expired"


async def test_a_failed_watch_ends_with_an_internal_error_event(
    sim_cluster: SimulatedCluster, kube_api: ApiClient
) -> None:
    """As kube-apiserver's etcd3 watcher ends a watch whose etcd watch failed (not by
    compaction): an ERROR event with a 500 InternalError Status, then the stream ends."""
    created = await core_api(kube_api).create_namespaced_pod("default", pod("a"))
    version = created.metadata.resource_version
    watching = asyncio.create_task(raw_watch(sim_cluster, f"resourceVersion={version}", 5))
    await asyncio.sleep(0.2)
    sim_cluster.admin.fail_watches()
    [event] = await watching
    assert event["type"] == "ERROR"
    status = event["object"]
    assert (status["kind"], status["code"], status["reason"]) == ("Status", 500, "InternalError")
    assert status["message"] == "Internal error occurred: etcdserver: no leader"
    # a watch opened afterwards is not failed again
    events = await raw_watch(sim_cluster, "", 1)
    assert summary(events) == [("ADDED", "a")]


@pytest.mark.cluster(nodes=0, history_size=10)
async def test_history_is_bounded(sim_cluster: SimulatedCluster) -> None:
    async with aiohttp.ClientSession() as session:
        for i in range(25):
            url = f"{sim_cluster.url}/api/v1/namespaces/default/configmaps"
            async with session.post(url, json={"metadata": {"name": f"c{i}"}}) as r:
                assert r.status == 201
    assert sim_cluster.store.compacted_rv > 0
    events = await raw_watch(sim_cluster, "resourceVersion=1", 1)
    assert events[0]["type"] == "ERROR"


async def test_bookmarks_carry_the_current_version(
    sim_cluster: SimulatedCluster, kube_api: ApiClient
) -> None:
    created = await core_api(kube_api).create_namespaced_pod("default", pod("a"))
    rv = created.metadata.resource_version
    events = await raw_watch(sim_cluster, f"resourceVersion={rv}&allowWatchBookmarks=true", 1)
    assert events[0]["type"] == "BOOKMARK"
    assert (
        events[0]["object"]["metadata"]["resourceVersion"]
        == sim_cluster.admin.state()["resourceVersion"].__str__()
    )


async def test_initial_events_end_with_an_annotated_bookmark(
    sim_cluster: SimulatedCluster, kube_api: ApiClient
) -> None:
    await core_api(kube_api).create_namespaced_pod("default", pod("a"))
    query = "sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan"
    events = await raw_watch(sim_cluster, query, 2)
    assert events[0]["type"] == "ADDED"
    assert events[1]["type"] == "BOOKMARK"
    assert events[1]["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}


async def test_timeout_seconds_ends_the_stream(
    sim_cluster: SimulatedCluster, kube_api: ApiClient
) -> None:
    loop = asyncio.get_running_loop()
    started = loop.time()
    events = await raw_watch(
        sim_cluster, f"resourceVersion={sim_cluster.store.rv}&timeoutSeconds=1", 10
    )
    assert events == [] and 0.9 < loop.time() - started < 3


async def test_label_selector_watch_sees_objects_enter_and_leave(
    sim_cluster: SimulatedCluster, kube_api: ApiClient
) -> None:
    core = core_api(kube_api)
    created = await core.create_namespaced_pod("default", pod("a", {"app": "x"}))
    await core.patch_namespaced_pod("a", "default", {"metadata": {"labels": {"app": "y"}}})
    await core.patch_namespaced_pod(
        "a", "default", {"metadata": {"labels": {"app": "x", "k": "1"}}}
    )
    await core.patch_namespaced_pod("a", "default", {"metadata": {"labels": {"k": "2"}}})
    rv = int(created.metadata.resource_version) - 1
    events = await raw_watch(sim_cluster, f"resourceVersion={rv}&labelSelector=app%3Dx", 4)
    assert [e["type"] for e in events] == ["ADDED", "DELETED", "ADDED", "MODIFIED"]


async def test_kubernetes_asyncio_watch_stream(kube_api: ApiClient) -> None:
    core = core_api(kube_api)
    listed = await core.list_namespaced_pod("default")
    rv = listed.metadata.resource_version

    async def writer() -> None:
        await core.create_namespaced_pod("default", pod("w"))
        await core.delete_namespaced_pod("w", "default")

    task = asyncio.create_task(writer())
    seen = []
    w = watch.Watch()
    async for event in w.stream(
        core.list_namespaced_pod, "default", resource_version=rv, timeout_seconds=5
    ):
        seen.append((event["type"], event["object"].metadata.name))
        if len(seen) == 2:
            w.stop()
    await task
    assert seen == [("ADDED", "w"), ("DELETED", "w")]


class Reflector:
    """A list-then-watch cache like client-go's: relists on 410, resumes otherwise."""

    def __init__(self, core: Any) -> None:
        self.core = core
        self.cache: dict[str, str] = {}  # name -> resourceVersion
        self.versions: list[int] = []  # every watch event applied, in order
        self.relists = 0
        #: set by a test to keep the reflector from watching again until it is set
        self.held: asyncio.Event | None = None
        #: set when the reflector waits on `held`, its last watch ended
        self.parked = asyncio.Event()

    async def run(self, stop: asyncio.Event) -> None:
        rv = await self.relist()
        while not stop.is_set():
            if self.held is not None:
                self.parked.set()
                await self.held.wait()
            w = watch.Watch()
            try:
                async for event in w.stream(
                    self.core.list_namespaced_pod, "default", resource_version=rv, timeout_seconds=1
                ):
                    obj = event["raw_object"]
                    rv = obj["metadata"]["resourceVersion"]
                    if event["type"] == "BOOKMARK":
                        continue
                    self.versions.append(int(rv))
                    if event["type"] == "DELETED":
                        self.cache.pop(obj["metadata"]["name"], None)
                    else:
                        self.cache[obj["metadata"]["name"]] = rv
            except ApiException as exc:
                assert exc.status == 410
                rv = await self.relist()
            finally:
                await w.close()

    async def relist(self) -> str:
        self.relists += 1
        listed = await self.core.list_namespaced_pod("default")
        self.cache = {p.metadata.name: p.metadata.resource_version for p in listed.items}
        rv: str = listed.metadata.resource_version
        return rv


async def churn(core: Any, prefix: str, n: int) -> None:
    for i in range(n):
        await core.create_namespaced_pod("default", pod(f"{prefix}-{i}"))
        await core.patch_namespaced_pod(
            f"{prefix}-{i}", "default", {"metadata": {"labels": {"i": str(i)}}}
        )
        if i % 3 == 0:
            await core.delete_namespaced_pod(f"{prefix}-{i}", "default")


async def truth(core: Any) -> dict[str, str]:
    listed = await core.list_namespaced_pod("default")
    return {p.metadata.name: p.metadata.resource_version for p in listed.items}


@pytest.mark.parametrize("expire", [False, True], ids=["dropped", "dropped-and-expired"])
async def test_watcher_resumes_without_missing_or_duplicating(
    sim_cluster: SimulatedCluster, kube_api: ApiClient, expire: bool
) -> None:
    core = core_api(kube_api)
    await churn(core, "before", 5)
    reflector = Reflector(core)
    stop = asyncio.Event()
    task = asyncio.create_task(reflector.run(stop))
    await asyncio.sleep(0.1)
    for round_ in range(3):
        await churn(core, f"r{round_}", 6)
        if expire:
            # the watcher resumes only once the changes it missed are gone from the history
            held = reflector.held = asyncio.Event()
            reflector.parked = asyncio.Event()
        sim_cluster.admin.drop_watches()
        if expire:
            await asyncio.wait_for(reflector.parked.wait(), 5)
            await churn(core, f"gap{round_}", 3)  # changes the watcher never streams
            sim_cluster.admin.expire_history()
            reflector.held = None
            held.set()
        await churn(core, f"after{round_}", 3)
    await asyncio.sleep(0.3)
    expected = await truth(core)

    async def caught_up() -> bool:
        return reflector.cache == expected

    await eventually(caught_up)
    stop.set()
    await asyncio.wait_for(task, 5)
    assert reflector.cache == expected
    assert reflector.versions == sorted(set(reflector.versions)), (
        "an event came twice or out of order"
    )
    if expire:
        assert reflector.relists == 4, "the first list, then one per expired history"
    else:
        assert reflector.relists == 1
        # nothing missed: every pod change after the initial list arrived exactly once
        first = reflector.versions[0]
        pod_changes = [
            c.rv for c in sim_cluster.store.changes_since(first - 1) if c.resource.plural == "pods"
        ]
        assert reflector.versions == pod_changes


async def test_a_change_written_while_the_watch_sends_arrives_without_another_write() -> None:
    """A watch wakes on the next write of its kind; one made while it was still sending the
    last batch must reach it all the same (no later write may ever come)."""
    store = Store()
    sent: list[bytes] = []
    second = asyncio.Event()

    async def write(data: bytes) -> None:
        sent.append(data)
        if len(sent) == 1:
            store.put(registry.POD, {"metadata": {"name": "second", "namespace": "default"}})
        if b'"second"' in data:
            second.set()

    store.put(registry.POD, {"metadata": {"name": "first", "namespace": "default"}})
    request = WatchRequest(
        registry.POD,
        None,
        parse(None, None, frozenset()),
        since=0,
        bookmarks=False,
        timeout=None,
    )
    serving = asyncio.create_task(serve(store, request, write, bookmark_interval=60))
    try:
        await asyncio.wait_for(second.wait(), 5)
    finally:
        serving.cancel()
    assert [
        json.loads(line)["object"]["metadata"]["name"] for line in b"".join(sent).splitlines()
    ] == [
        "first",
        "second",
    ]


async def test_a_watch_wakes_for_writes_of_its_own_kind_only() -> None:
    """Each kind has its own watch cache in kube-apiserver: a pod watch sleeps through the
    Events written about pods."""
    store = Store()
    waiting = asyncio.create_task(store.wait(registry.POD))
    await asyncio.sleep(0)
    store.put(registry.EVENT, {"metadata": {"name": "e", "namespace": "default"}})
    await asyncio.sleep(0)
    assert not waiting.done()
    store.put(registry.POD, {"metadata": {"name": "p", "namespace": "default"}})
    await asyncio.wait_for(waiting, 5)
