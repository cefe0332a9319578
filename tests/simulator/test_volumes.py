"""PersistentVolumeClaims: created, bound at once, deleted; a pod mounting a claim that
does not exist waits (FailedScheduling), as on a real cluster, and runs once it exists."""

from __future__ import annotations

from typing import Any

from kubernetes_asyncio.client import ApiClient
from kubernetes_asyncio.client.exceptions import ApiException

from tests.simulator.kube import core_api, eventually, running_pod


def claim(name: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
    }


async def test_a_claim_is_bound_at_once_and_can_be_deleted(kube_api: ApiClient) -> None:
    core = core_api(kube_api)
    created = await core.create_namespaced_persistent_volume_claim("default", claim("data"))

    async def bound() -> bool:
        got = await core.read_namespaced_persistent_volume_claim("data", "default")
        return bool(got.status.phase == "Bound")

    await eventually(bound)
    got = await core.read_namespaced_persistent_volume_claim("data", "default")
    assert got.spec.volume_name == f"pvc-{created.metadata.uid}"
    assert got.status.capacity == {"storage": "1Gi"}
    assert got.status.access_modes == ["ReadWriteOnce"]
    await core.delete_namespaced_persistent_volume_claim("data", "default")
    try:
        await core.read_namespaced_persistent_volume_claim("data", "default")
        raise AssertionError("the claim is still there")
    except ApiException as exc:
        assert exc.status == 404


async def test_a_pod_waits_for_its_claim(kube_api: ApiClient) -> None:
    core = core_api(kube_api)
    pod = running_pod(
        "uses-data",
        ["sleep", "1"],
        restartPolicy="Never",
        volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}],
    )
    await core.create_namespaced_pod("default", pod)

    async def waiting() -> bool:
        got = await core.read_namespaced_pod("uses-data", "default")
        return any(
            c.type == "PodScheduled" and c.status == "False" for c in got.status.conditions or ()
        )

    await eventually(waiting)
    got = await core.read_namespaced_pod("uses-data", "default")
    assert got.spec.node_name is None
    (condition,) = got.status.conditions
    assert condition.message == '0/2 nodes are available: persistentvolumeclaim "data" not found.'
    events = await core.list_namespaced_event(
        "default", field_selector="involvedObject.name=uses-data,reason=FailedScheduling"
    )
    assert [e.message for e in events.items] == [condition.message]

    await core.create_namespaced_persistent_volume_claim("default", claim("data"))

    async def ran() -> bool:
        got = await core.read_namespaced_pod("uses-data", "default")
        return bool(got.status.phase == "Succeeded")

    await eventually(ran, within=10)
