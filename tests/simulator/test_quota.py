"""ResourceQuota as a real API server enforces it: the quota admission plugin refuses a
create that would exceed a quota of its namespace with 403 Forbidden and Kubernetes'
message, charges what it admits, and the quota controller keeps `status.hard` and
`status.used` (a finished or deleted pod stops counting; a raised limit applies once
synced)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from kubernetes_asyncio.client import ApiClient
from kubernetes_asyncio.client.exceptions import ApiException

from lavalog.apimachinery.quantity import Quantity
from lavalog.simulator.quota import pod_usage
from tests.simulator.kube import VC, core_api, custom_api, eventually, running_pod, vcjob

GPU = "nvidia.com/gpu"


def gpu_pod(name: str, command: list[str], *, cpu: str = "1") -> dict[str, Any]:
    """A pod asking for one GPU by its limit only (the API server defaults the request)
    and for `cpu`."""
    pod = running_pod(name, command, restartPolicy="Never")
    pod["spec"]["containers"][0]["resources"] = {
        "requests": {"cpu": cpu},
        "limits": {GPU: "1"},
    }
    return pod


def quota(name: str, hard: dict[str, str]) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"hard": hard}}


async def synced(api: ApiClient, name: str, used: dict[str, str] | None = None) -> Any:
    """The quota once its status says `used` (and its hard limits are synced)."""
    found: list[Any] = []

    async def reached() -> bool:
        got = await core_api(api).read_namespaced_resource_quota(name, "default")
        found[:] = [got]
        status = got.status
        return bool(
            status
            and status.hard == got.spec.hard
            and all((status.used or {}).get(k) == v for k, v in (used or {}).items())
        )

    await eventually(reached, within=10)
    return found[0]


async def refusal(call: Any) -> dict[str, Any]:
    with pytest.raises(ApiException) as refused:
        await call
    assert refused.value.status == 403
    body: dict[str, Any] = json.loads(refused.value.body or b"{}")
    return body


async def test_a_full_quota_refuses_then_a_finished_pod_or_a_raise_makes_room(
    kube_api: ApiClient,
) -> None:
    core = core_api(kube_api)
    hard = {"pods": "2", "requests.cpu": "2", f"requests.{GPU}": "2", "count/pods": "5"}
    await core.create_namespaced_resource_quota("default", quota("compute", hard))
    zero = await synced(kube_api, "compute", {"pods": "0"})
    assert zero.status.used == {
        "pods": "0",
        "requests.cpu": "0",
        f"requests.{GPU}": "0",
        "count/pods": "0",
    }
    await core.create_namespaced_pod("default", gpu_pod("a", ["sleep", "20"]))
    await core.create_namespaced_pod("default", gpu_pod("b", ["sleep", "infinity"]))
    await synced(kube_api, "compute", {"pods": "2", "requests.cpu": "2"})
    body = await refusal(core.create_namespaced_pod("default", gpu_pod("c", ["sleep", "1"])))
    assert (body["reason"], body["code"], body["status"]) == ("Forbidden", 403, "Failure")
    assert body["message"] == (
        'pods "c" is forbidden: exceeded quota: compute, '
        "requested: pods=1,requests.cpu=1,requests.nvidia.com/gpu=1, "
        "used: pods=2,requests.cpu=2,requests.nvidia.com/gpu=2, "
        "limited: pods=2,requests.cpu=2,requests.nvidia.com/gpu=2"
    )
    assert body["details"] == {"name": "c", "kind": "pods"}

    # a finished pod stops counting (count/pods still counts it: it exists)
    after = await synced(kube_api, "compute", {"pods": "1", "requests.cpu": "1"})
    assert after.status.used["count/pods"] == "2"
    await core.create_namespaced_pod("default", gpu_pod("c", ["sleep", "infinity"]))

    # full again; a raised limit applies once the controller synced it
    await refusal(core.create_namespaced_pod("default", gpu_pod("d", ["sleep", "1"])))
    raised = {**hard, "pods": "3", "requests.cpu": "3", f"requests.{GPU}": "3"}
    await core.patch_namespaced_resource_quota("compute", "default", {"spec": {"hard": raised}})
    await synced(kube_api, "compute", {"pods": "2"})
    await core.create_namespaced_pod("default", gpu_pod("d", ["sleep", "infinity"]))
    await synced(kube_api, "compute", {"pods": "3", "requests.cpu": "3"})

    # and a deleted pod gives its share back
    await core.delete_namespaced_pod("d", "default", grace_period_seconds=0)
    await synced(kube_api, "compute", {"pods": "2"})


async def test_a_quotad_resource_each_container_must_set(kube_api: ApiClient) -> None:
    core = core_api(kube_api)
    await core.create_namespaced_resource_quota(
        "default", quota("mem", {"limits.memory": "1Gi", "requests.cpu": "1"})
    )
    await synced(kube_api, "mem")
    pod = running_pod("bare", ["sleep", "1"])
    pod["spec"]["initContainers"] = [{"name": "init", "image": "x", "command": ["true"]}]
    body = await refusal(core.create_namespaced_pod("default", pod))
    assert body["message"] == (
        'pods "bare" is forbidden: failed quota: mem: must specify '
        "limits.memory for: init,main; requests.cpu for: init,main"
    )


async def test_generated_names_and_other_kinds(kube_api: ApiClient) -> None:
    """A refused `generateName` create is named by its prefix; a claim is charged its
    storage; any kind by `count/<resource>.<group>`."""
    core = core_api(kube_api)
    await core.create_namespaced_resource_quota(
        "default",
        quota(
            "objects",
            {
                "count/pods": "0",
                "persistentvolumeclaims": "1",
                "requests.storage": "1Gi",
                "count/jobs.batch.volcano.sh": "1",
            },
        ),
    )
    await synced(kube_api, "objects", {"persistentvolumeclaims": "0"})
    pod = running_pod("", ["sleep", "1"])
    pod["metadata"] = {"generateName": "worker-"}
    body = await refusal(core.create_namespaced_pod("default", pod))
    assert body["message"] == (
        'pods "worker-" is forbidden: exceeded quota: objects, '
        "requested: count/pods=1, used: count/pods=0, limited: count/pods=0"
    )

    def claim(name: str) -> dict[str, Any]:
        return {
            "metadata": {"name": name},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "1Gi"}},
            },
        }

    await core.create_namespaced_persistent_volume_claim("default", claim("data"))
    body = await refusal(core.create_namespaced_persistent_volume_claim("default", claim("more")))
    assert body["message"] == (
        'persistentvolumeclaims "more" is forbidden: exceeded quota: objects, '
        "requested: persistentvolumeclaims=1,requests.storage=1Gi, "
        "used: persistentvolumeclaims=1,requests.storage=1Gi, "
        "limited: persistentvolumeclaims=1,requests.storage=1Gi"
    )
    custom = custom_api(kube_api)
    await custom.create_namespaced_custom_object(*VC, "default", "jobs", vcjob("one"))
    body = await refusal(
        custom.create_namespaced_custom_object(*VC, "default", "jobs", vcjob("two"))
    )
    assert body["message"] == (
        'jobs.batch.volcano.sh "two" is forbidden: exceeded quota: objects, '
        "requested: count/jobs.batch.volcano.sh=1, used: count/jobs.batch.volcano.sh=1, "
        "limited: count/jobs.batch.volcano.sh=1"
    )
    assert body["details"] == {"name": "two", "group": "batch.volcano.sh", "kind": "jobs"}


async def test_a_quota_not_counted_yet(kube_api: ApiClient) -> None:
    """Admission reads `status`: limits the controller has not synced do not apply, and
    a limit without a usage count refuses everything it covers."""
    core = core_api(kube_api)
    await core.create_namespaced_resource_quota("default", quota("q", {"pods": "5"}))
    await synced(kube_api, "q", {"pods": "0"})
    await core.replace_namespaced_resource_quota_status(
        "q", "default", {"metadata": {"name": "q"}, "status": {"hard": {"pods": "5"}}}
    )
    body = await refusal(core.create_namespaced_pod("default", running_pod("p", ["true"])))
    assert body["message"] == 'pods "p" is forbidden: status unknown for quota: q, resources: pods'


async def test_a_dry_run_create_is_checked_but_not_charged(kube_api: ApiClient) -> None:
    core = core_api(kube_api)
    await core.create_namespaced_resource_quota("default", quota("q", {"count/pods": "1"}))
    await synced(kube_api, "q", {"count/pods": "0"})
    await core.create_namespaced_pod("default", running_pod("p", ["sleep", "5"]), dry_run="All")
    got = await core.read_namespaced_resource_quota("q", "default")
    assert got.status.used == {"count/pods": "0"}
    await core.create_namespaced_pod("default", running_pod("p", ["sleep", "5"]))
    body = await refusal(
        core.create_namespaced_pod("default", running_pod("r", ["sleep", "5"]), dry_run="All")
    )
    assert "exceeded quota: q" in body["message"]


async def test_resource_quotas_are_served_with_list_and_watch(kube_api: ApiClient) -> None:
    core = core_api(kube_api)
    await core.create_namespaced_resource_quota("default", quota("listed", {"pods": "1"}))
    found = await core.list_namespaced_resource_quota("default")
    assert [q.metadata.name for q in found.items] == ["listed"]
    await core.delete_namespaced_resource_quota("listed", "default")
    assert not (await core.list_namespaced_resource_quota("default")).items


# what a pod costs ------------------------------------------------------------------------

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _container(
    name: str, requests: dict[str, str], limits: dict[str, str] | None = None
) -> dict[str, Any]:
    return {"name": name, "resources": {"requests": requests, "limits": limits or {}}}


def _printed(usage: dict[str, Quantity]) -> dict[str, str]:
    return {name: str(q) for name, q in usage.items()}


def test_a_pod_costs_its_containers_or_its_largest_init_container_plus_overhead() -> None:
    pod = {
        "metadata": {},
        "spec": {
            "containers": [
                _container("a", {"cpu": "500m", "memory": "1Gi"}, {"memory": "2Gi"}),
                _container("b", {"cpu": "250m", "memory": "512Mi", GPU: "2"}),
            ],
            "initContainers": [
                _container("big-init", {"cpu": "2", "memory": "1Gi"}),
                {**_container("sidecar", {"cpu": "100m"}), "restartPolicy": "Always"},
            ],
            "overhead": {"cpu": "10m"},
        },
        "status": {"phase": "Running"},
    }
    assert _printed(pod_usage(pod, NOW)) == {
        "count/pods": "1",
        "pods": "1",
        # max(750m + 100m sidecar, 2 init) + 10m overhead
        "cpu": "2010m",
        "requests.cpu": "2010m",
        "memory": "1536Mi",
        "requests.memory": "1536Mi",
        "limits.memory": "2Gi",
        f"requests.{GPU}": "2",
    }


@pytest.mark.parametrize(
    ("status", "meta", "charged"),
    [
        pytest.param({"phase": "Succeeded"}, {}, False, id="succeeded"),
        pytest.param({"phase": "Failed"}, {}, False, id="failed"),
        pytest.param(
            {"phase": "Running"},
            {"deletionTimestamp": "2025-12-31T23:59:00Z", "deletionGracePeriodSeconds": 30},
            False,
            id="past-its-grace",
        ),
        pytest.param(
            {"phase": "Running"},
            {"deletionTimestamp": "2025-12-31T23:59:50Z", "deletionGracePeriodSeconds": 30},
            True,
            id="terminating",
        ),
    ],
)
def test_a_finished_pod_costs_only_its_count(
    status: dict[str, Any], meta: dict[str, Any], charged: bool
) -> None:
    pod = {
        "metadata": meta,
        "spec": {"containers": [_container("a", {"cpu": "1"})]},
        "status": status,
    }
    usage = _printed(pod_usage(pod, NOW))
    assert ("requests.cpu" in usage) == charged and usage["count/pods"] == "1"
