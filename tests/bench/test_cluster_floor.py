"""The cluster's floor makes what the controller makes for each Job, on the simulated
cluster over HTTP: the Job, its PodGroup, and its pods once vc-scheduler admitted it."""

from __future__ import annotations

from typing import Any

import msgspec

from bench.cluster_floor import make_gangs
from bench.scale import job
from lavalog.controller.kube import Kube


async def test_every_gang_is_admitted_before_its_pods_are_made(kube: Kube) -> None:
    jobs = [job(index, pods=2, finish=None, namespace="floor") for index in range(5)]

    seconds = await make_gangs(kube, "floor", jobs, concurrency=4)

    assert seconds > 0
    groups = _items(
        await kube.request("GET", "/apis/scheduling.volcano.sh/v1beta1/namespaces/floor/podgroups")
    )
    pods = _items(await kube.request("GET", "/api/v1/namespaces/floor/pods"))
    made = {(g["metadata"]["name"], g["spec"]["minMember"]) for g in groups}
    uids = {
        j["metadata"]["name"]: j["metadata"]["uid"]
        for j in _items(
            await kube.request("GET", "/apis/batch.volcano.sh/v1alpha1/namespaces/floor/jobs")
        )
    }
    assert made == {(f"job-{i}-{uids[f'job-{i}']}", 2) for i in range(5)}
    assert all(g["status"]["phase"] != "Pending" for g in groups)
    assert sorted(p["metadata"]["name"] for p in pods) == sorted(
        f"job-{i}-main-{n}" for i in range(5) for n in range(2)
    )
    for pod in pods:  # as the actuator makes them: in their gang, owned by their Job
        group = pod["metadata"]["annotations"]["scheduling.k8s.io/group-name"]
        owner = pod["metadata"]["ownerReferences"][0]
        assert group == f"{owner['name']}-{owner['uid']}"


def _items(listed: bytes) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = msgspec.json.decode(listed)["items"]
    return items
