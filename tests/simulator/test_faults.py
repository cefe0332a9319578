"""Injected faults: API latency, 500 and 429 answers, and the /sim admin endpoints."""

from __future__ import annotations

import asyncio

import aiohttp
import pytest
from kubernetes_asyncio.client import ApiClient
from kubernetes_asyncio.client.exceptions import ApiException

from lavalog.simulator.faults import ApiFaults
from lavalog.simulator.server import SimulatedCluster
from tests.simulator.kube import core_api, eventually, pod, running_pod


@pytest.mark.parametrize(
    ("settings", "code", "reason"),
    [
        pytest.param({"error_rate": 1.0}, 500, "InternalError", id="500"),
        pytest.param({"throttle_rate": 1.0}, 429, "TooManyRequests", id="429"),
    ],
)
async def test_error_answers_are_status_objects(
    sim_cluster: SimulatedCluster, settings: dict[str, float], code: int, reason: str
) -> None:
    sim_cluster.admin.set_api_faults(**settings)
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"{sim_cluster.url}/api/v1/pods") as r,
    ):
        body = await r.json()
        assert (r.status, body["kind"], body["reason"]) == (code, "Status", reason)
        if code == 429:
            assert r.headers["Retry-After"] == "1"
        async with session.get(f"{sim_cluster.url}/sim/state") as admin:
            assert admin.status == 200  # the admin endpoints never fail


@pytest.mark.cluster(nodes=0, api_faults=ApiFaults(error_rate=0.3, seed=7))
async def test_error_rate_hits_a_share_of_requests(kube_api: ApiClient) -> None:
    failures = 0
    for _ in range(200):
        try:
            await core_api(kube_api).list_namespace()
        except ApiException as exc:
            assert exc.status == 500
            failures += 1
    assert 30 < failures < 90


async def test_latency_delays_answers(sim_cluster: SimulatedCluster, kube_api: ApiClient) -> None:
    sim_cluster.admin.set_api_faults(latency=0.2)
    loop = asyncio.get_running_loop()
    started = loop.time()
    await core_api(kube_api).list_namespace()
    assert loop.time() - started >= 0.2
    sim_cluster.admin.set_api_faults(latency=0)


async def test_admin_http_endpoints(sim_cluster: SimulatedCluster, kube_api: ApiClient) -> None:
    core = core_api(kube_api)
    await core.create_namespaced_pod(
        "default", running_pod("p", ["sleep", "3600"], terminationGracePeriodSeconds=1)
    )
    url = sim_cluster.url + "/sim"
    async with aiohttp.ClientSession() as session:
        async with session.put(f"{url}/faults", json={"latency": 0.01, "throttle_rate": 0}) as r:
            assert (await r.json())["latency"] == 0.01
        async with session.put(f"{url}/faults", json={"bogus": 1}) as r:
            assert r.status == 400
        async with session.put(f"{url}/faults", json={"latency": 0}) as r:
            assert r.status == 200
        before = sim_cluster.clock.seconds()
        async with session.post(f"{url}/clock/advance", json={"seconds": 100}) as r:
            assert r.status == 200
        assert sim_cluster.clock.seconds() - before >= 100
        rv_before = sim_cluster.store.rv
        async with session.post(f"{url}/watches/expire") as r:
            assert r.status == 200
        assert sim_cluster.store.compacted_rv >= rv_before
        async with session.post(f"{url}/watches/drop") as r:
            assert r.status == 200
        async with session.post(f"{url}/nodes/node-9/lose") as r:
            assert r.status == 404
        async with session.post(f"{url}/nodes/node-2/lose") as r:
            assert r.status == 200
        async with session.post(f"{url}/nodes/node-2/restore") as r:
            assert r.status == 200

        async def running() -> bool:
            return bool((await core.read_namespaced_pod("p", "default")).status.phase == "Running")

        await eventually(running)
        async with session.post(f"{url}/pods/default/p/evict") as r:
            assert r.status == 200

        async def evicted() -> bool:
            return not (await core.list_namespaced_pod("default")).items

        await eventually(evicted)
        async with session.get(f"{url}/state") as r:
            state = await r.json()
        assert state["counts"]["nodes"] == 2 and state["counts"]["pods"] == 0


async def test_a_crash_fails_the_running_pod_with_its_exit_code(
    sim_cluster: SimulatedCluster, kube_api: ApiClient
) -> None:
    core = core_api(kube_api)
    await core.create_namespaced_pod(
        "default", running_pod("crashy", ["sleep", "3600"], restartPolicy="Never")
    )

    async def running() -> bool:
        pod = await core.read_namespaced_pod("crashy", "default")
        return bool(pod.status.phase == "Running")

    await eventually(running)
    async with aiohttp.ClientSession() as session:
        url = f"{sim_cluster.url}/sim/pods/default/crashy/crash?exitCode=137"
        async with session.post(url) as answer:
            assert answer.status == 200

    async def failed() -> bool:
        pod = await core.read_namespaced_pod("crashy", "default")
        return bool(pod.status.phase == "Failed")

    await eventually(failed)
    pod = await core.read_namespaced_pod("crashy", "default")
    assert pod.status.container_statuses[0].state.terminated.exit_code == 137
    with pytest.raises(Exception, match="not running"):
        sim_cluster.admin.crash("default", "nowhere", 1)


async def test_state_counts_api_requests_by_verb_and_resource(
    sim_cluster: SimulatedCluster, kube_api: ApiClient
) -> None:
    """Benchmarks read the API calls a controller made per verb and resource from here."""
    core = core_api(kube_api)
    await core.create_namespaced_pod("default", running_pod("counted", ["sleep", "3600"]))
    await core.read_namespaced_pod("counted", "default")
    await core.read_namespaced_pod_status("counted", "default")
    await core.list_namespaced_pod("default")
    await core.delete_namespaced_pod("counted", "default")
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"{sim_cluster.url}/sim/state") as r,
    ):
        calls = (await r.json())["apiCalls"]
    assert calls == {
        "create pods": 1,
        "delete pods": 1,
        "get pods": 1,
        "get pods/status": 1,
        "list pods": 1,
    }


async def test_state_counts_refused_requests_by_verb_resource_and_code(
    sim_cluster: SimulatedCluster, kube_api: ApiClient
) -> None:
    """A write made again after a 409 Conflict is told apart from one too many by this."""
    core = core_api(kube_api)
    # a pod no scheduler or kubelet writes: only this test moves its resourceVersion
    created = await core.create_namespaced_pod("default", pod("once"))
    with pytest.raises(ApiException) as exists:
        await core.create_namespaced_pod("default", pod("once"))
    assert exists.value.status == 409
    created.metadata.labels = {"edited": "yes"}
    await core.replace_namespaced_pod("once", "default", created)
    with pytest.raises(ApiException) as conflict:  # its resourceVersion is now stale
        await core.replace_namespaced_pod_status("once", "default", created)
    assert conflict.value.status == 409
    with pytest.raises(ApiException):
        await core.read_namespaced_pod("nowhere", "default")
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"{sim_cluster.url}/sim/state") as r,
    ):
        state = await r.json()
    assert state["apiRefusals"] == {
        "create pods 409": 1,
        "get pods 404": 1,
        "update pods/status 409": 1,
    }
    assert state["apiCalls"]["create pods"] == 2


async def test_the_record_of_pod_creations_keeps_every_pod_of_a_name(
    sim_cluster: SimulatedCluster, kube_api: ApiClient
) -> None:
    """GET /sim/pods/created: what a chaos run counts duplicates from."""
    core = core_api(kube_api)
    pod = running_pod("twice", ["sleep", "3600"])
    pod["metadata"]["annotations"] = {"volcano.sh/job-version": "2"}
    await core.create_namespaced_pod("default", pod)
    await core.delete_namespaced_pod("twice", "default", grace_period_seconds=0)

    async def gone() -> bool:
        return not (await core.list_namespaced_pod("default")).items

    await eventually(gone)
    await core.create_namespaced_pod("default", pod)
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"{sim_cluster.url}/sim/pods/created") as answer,
    ):
        records = (await answer.json())["items"]

    assert [(r["name"], r["jobVersion"]) for r in records] == [("twice", "2"), ("twice", "2")]
    first, second = records
    assert first["uid"] != second["uid"]
    assert first["createdVersion"] < first["deletedVersion"] < second["createdVersion"]
    assert second["deletedVersion"] is None
