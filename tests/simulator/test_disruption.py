"""`DisruptionTarget` as Kubernetes writes it: on the pod's status before it is deleted
(Eviction API, vc-scheduler preemption, the taint eviction controller) or as its
kubelet fails it (node-pressure eviction), with Kubernetes' reasons and messages."""

from __future__ import annotations

import math
from typing import Any

import pytest
from kubernetes_asyncio.client import ApiClient

from lavalog.simulator import registry
from lavalog.simulator.disruption import update_condition
from lavalog.simulator.server import SimulatedCluster
from lavalog.simulator.store import Change
from lavalog.simulator.taints import toleration_seconds
from tests.simulator.kube import (
    SCHED,
    core_api,
    custom_api,
    event_messages,
    eventually,
    running_pod,
)
from tests.simulator.test_scheduler import podgroup, worker


class PodHistory:
    """Every stored version of one pod, in order."""

    def __init__(self, cluster: SimulatedCluster, name: str) -> None:
        self.versions: list[tuple[str, dict[str, Any]]] = []
        self.name = name
        cluster.store.subscribe(self._seen)

    def _seen(self, change: Change) -> None:
        if change.resource is registry.POD and change.entry.obj["metadata"]["name"] == self.name:
            self.versions.append((change.type, change.entry.obj))

    def first_with(self, kind: str) -> int:
        return next(
            i
            for i, (_, pod) in enumerate(self.versions)
            if any(c["type"] == kind for c in pod.get("status", {}).get("conditions") or ())
        )

    def first_deleting(self) -> int:
        return next(
            i
            for i, (_, pod) in enumerate(self.versions)
            if pod["metadata"].get("deletionTimestamp")
        )

    def condition(self, index: int, kind: str) -> dict[str, Any]:
        conditions = self.versions[index][1]["status"]["conditions"]
        found: dict[str, Any] = next(c for c in conditions if c["type"] == kind)
        return found

    def gone(self) -> bool:
        return bool(self.versions) and self.versions[-1][0] == "DELETED"


def unreachable_for(seconds: int) -> dict[str, Any]:
    """A toleration of an unreachable node for `seconds`."""
    return {
        "key": "node.kubernetes.io/unreachable",
        "operator": "Exists",
        "effect": "NoExecute",
        "tolerationSeconds": seconds,
    }


async def running(api: ApiClient, name: str) -> None:
    async def up() -> bool:
        pod = await core_api(api).read_namespaced_pod(name, "default")
        return bool(pod.status.phase == "Running")

    await eventually(up)


def fields(condition: dict[str, Any]) -> tuple[str, str, str]:
    return condition["status"], condition["reason"], condition["message"]


async def test_the_eviction_api_marks_the_pod_then_deletes_it(
    sim_cluster: SimulatedCluster, kube_api: ApiClient
) -> None:
    history = PodHistory(sim_cluster, "ev")
    core = core_api(kube_api)
    await core.create_namespaced_pod(
        "default", running_pod("ev", ["sleep", "3600"], terminationGracePeriodSeconds=5)
    )
    await running(kube_api, "ev")
    eviction = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "ev"}}
    await core.create_namespaced_pod_eviction("ev", "default", eviction)
    await eventually(lambda: _true(history.gone()))
    marked, deleting = history.first_with("DisruptionTarget"), history.first_deleting()
    assert marked < deleting  # the condition first, then the delete
    assert fields(history.condition(marked, "DisruptionTarget")) == (
        "True",
        "EvictionByEvictionAPI",
        "Eviction API: evicting",
    )
    # the kubelet's status writes while it stops the pod keep the condition, in front
    _, last = history.versions[-1]
    assert last["status"]["conditions"][0]["type"] == "DisruptionTarget"
    assert last["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 137


async def test_the_admin_eviction_is_the_eviction_api(sim_cluster: SimulatedCluster) -> None:
    history = PodHistory(sim_cluster, "ev2")
    sim_cluster.objects.create(registry.POD, "default", running_pod("ev2", ["sleep", "3600"]))
    sim_cluster.admin.evict("default", "ev2")
    marked, deleting = history.first_with("DisruptionTarget"), history.first_deleting()
    assert marked < deleting
    assert history.condition(marked, "DisruptionTarget")["reason"] == "EvictionByEvictionAPI"


async def test_vc_scheduler_preemption(sim_cluster: SimulatedCluster, kube_api: ApiClient) -> None:
    """vc-scheduler's evictor: Events on the PodGroup and the pod, Ready False (reason
    Evict) and DisruptionTarget in one status update, then the delete."""
    history = PodHistory(sim_cluster, "low-worker-0")
    await custom_api(kube_api).create_namespaced_custom_object(
        *SCHED, "default", "podgroups", podgroup("low", 1)
    )
    await core_api(kube_api).create_namespaced_pod(
        "default", worker("low", 0, ["sleep", "3600"], gang=True)
    )
    await running(kube_api, "low-worker-0")
    sim_cluster.admin.preempt("default", "low-worker-0")
    marked, deleting = history.first_with("DisruptionTarget"), history.first_deleting()
    assert marked < deleting
    assert fields(history.condition(marked, "DisruptionTarget")) == (
        "True",
        "PreemptionByScheduler",
        "volcano: preempting to accommodate a higher priority pod",
    )
    assert fields(history.condition(marked, "Ready")) == (
        "False",
        "Evict",
        "Pod is evicted, because of preempt",
    )
    assert await event_messages(kube_api, "PodGroup", "low", "Evict") == ["preempt"]
    assert await event_messages(kube_api, "Pod", "low-worker-0", "Evict") == [
        "Pod is evicted, because of preempt"
    ]


async def test_a_lost_nodes_pods_are_deleted_after_their_toleration(
    sim_cluster: SimulatedCluster, kube_api: ApiClient
) -> None:
    """The taint eviction controller deletes a pod on a node tainted unreachable once its
    toleration (here 5 s) is over: its Event, then DisruptionTarget, then the delete."""
    history = PodHistory(sim_cluster, "short")
    core = core_api(kube_api)
    pod = running_pod("short", ["sleep", "3600"], nodeName="node-1")
    pod["spec"]["tolerations"] = [unreachable_for(5)]
    await core.create_namespaced_pod("default", pod)
    await core.create_namespaced_pod(
        "default", running_pod("default-toleration", ["sleep", "3600"], nodeName="node-1")
    )
    stored = await core.read_namespaced_pod("default-toleration", "default")
    assert [(t.key, t.effect, t.toleration_seconds) for t in stored.spec.tolerations] == [
        ("node.kubernetes.io/not-ready", "NoExecute", 300),
        ("node.kubernetes.io/unreachable", "NoExecute", 300),
    ]
    await running(kube_api, "short")
    sim_cluster.admin.lose_node("node-1")
    await eventually(lambda: _true(history.gone()))
    marked = history.first_with("DisruptionTarget")
    assert fields(history.condition(marked, "DisruptionTarget")) == (
        "True",
        "DeletionByTaintManager",
        "Taint manager: deleting due to NoExecute taint",
    )
    assert await event_messages(kube_api, "Pod", "short", "TaintManagerEviction") == [
        "Marking for deletion Pod default/short"
    ]
    # the pod that tolerates the taint for 300 s is still there; a restored node cancels
    assert await core.read_namespaced_pod("default-toleration", "default")
    sim_cluster.admin.restore_node("node-1")

    async def cancelled() -> bool:
        said = await event_messages(kube_api, "Pod", "default-toleration", "TaintManagerEviction")
        return said == ["Cancelling deletion of Pod default/default-toleration"]

    await eventually(cancelled)
    sim_cluster.admin.advance(400)
    assert await core.read_namespaced_pod("default-toleration", "default")


async def test_an_unreachable_node_as_kubernetes_sees_it(
    sim_cluster: SimulatedCluster, kube_api: ApiClient
) -> None:
    """`lose_node(fail_pods=False)`: the pod runs on, unreported; the node controller
    marks it not Ready; after its toleration the taint eviction controller marks it
    DisruptionTarget and deletes it, which its kubelet carries out once the node is
    back. Nothing ever says it failed."""
    history = PodHistory(sim_cluster, "cut-off")
    core = core_api(kube_api)
    pod = running_pod(
        "cut-off", ["sleep", "3600"], nodeName="node-1", terminationGracePeriodSeconds=5
    )
    pod["spec"]["tolerations"] = [unreachable_for(10)]
    await core.create_namespaced_pod("default", pod)
    await running(kube_api, "cut-off")
    sim_cluster.admin.lose_node("node-1", fail_pods=False)
    unready = await core.read_namespaced_pod("cut-off", "default")
    assert unready.status.phase == "Running"
    assert next(c for c in unready.status.conditions if c.type == "Ready").status == "False"
    assert await event_messages(kube_api, "Pod", "cut-off", "NodeNotReady") == ["Node is not ready"]

    async def deleting() -> bool:
        got = await core.read_namespaced_pod("cut-off", "default")
        return bool(got.metadata.deletion_timestamp)

    await eventually(deleting)
    marked, deleted = history.first_with("DisruptionTarget"), history.first_deleting()
    assert marked < deleted
    assert history.condition(marked, "DisruptionTarget")["reason"] == "DeletionByTaintManager"
    phases = {p.get("status", {}).get("phase") for _, p in history.versions}
    assert phases == {"Pending", "Running"}
    sim_cluster.admin.restore_node("node-1")
    await eventually(lambda: _true(history.gone()))


async def test_node_pressure_eviction_fails_the_pod(
    sim_cluster: SimulatedCluster, kube_api: ApiClient
) -> None:
    core = core_api(kube_api)
    await core.create_namespaced_pod("default", running_pod("hungry", ["sleep", "3600"]))
    await running(kube_api, "hungry")
    sim_cluster.admin.evict_for_pressure("default", "hungry", "memory")

    async def evicted() -> bool:
        pod = await core.read_namespaced_pod("hungry", "default")
        return bool(pod.status.phase == "Failed")

    await eventually(evicted)
    pod = await core.read_namespaced_pod("hungry", "default")  # kept, as the kubelet keeps it
    message = "The node was low on resource: memory. "
    assert (pod.status.reason, pod.status.message) == ("Evicted", message)
    target = next(c for c in pod.status.conditions if c.type == "DisruptionTarget")
    assert (target.status, target.reason, target.message) == (
        "True",
        "TerminationByKubelet",
        message,
    )
    assert pod.status.container_statuses[0].state.terminated.exit_code == 137
    assert not pod.metadata.deletion_timestamp
    assert await event_messages(kube_api, "Pod", "hungry", "Evicted") == [message]


async def _true(value: bool) -> bool:
    return value


# the pure parts ------------------------------------------------------------------------

UNREACHABLE = {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"}


@pytest.mark.parametrize(
    ("tolerations", "seconds"),
    [
        pytest.param([], 0.0, id="not-tolerated"),
        pytest.param([{"operator": "Exists"}], math.inf, id="tolerates-everything"),
        pytest.param(
            [{"key": UNREACHABLE["key"], "operator": "Exists", "tolerationSeconds": 30}],
            30.0,
            id="for-a-while",
        ),
        pytest.param(
            [
                {"key": UNREACHABLE["key"], "operator": "Exists", "tolerationSeconds": 30},
                {"operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 10},
            ],
            10.0,
            id="shortest",
        ),
        pytest.param([{"key": UNREACHABLE["key"], "value": "x"}], 0.0, id="equal-needs-value"),
        pytest.param([{"key": "other", "operator": "Exists"}], 0.0, id="other-key"),
    ],
)
def test_toleration_seconds(tolerations: list[dict[str, Any]], seconds: float) -> None:
    assert toleration_seconds(tolerations, [UNREACHABLE]) == seconds


def test_update_condition_keeps_the_time_while_the_status_holds() -> None:
    status: dict[str, Any] = {
        "conditions": [{"type": "Ready", "status": "False", "lastTransitionTime": "t0"}]
    }
    assert update_condition(status, {"type": "Ready", "status": "False", "reason": "Evict"}, "t1")
    assert status["conditions"] == [
        {"type": "Ready", "status": "False", "reason": "Evict", "lastTransitionTime": "t0"}
    ]
    assert not update_condition(
        status, {"type": "Ready", "status": "False", "reason": "Evict"}, "t2"
    )
    assert update_condition(status, {"type": "DisruptionTarget", "status": "True"}, "t3")
    assert status["conditions"][1] == {
        "type": "DisruptionTarget",
        "status": "True",
        "lastTransitionTime": "t3",
    }
