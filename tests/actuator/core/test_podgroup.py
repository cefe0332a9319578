"""The PodGroup of a job: gang sizes and the minResources sum Volcano's scheduler sees."""

from __future__ import annotations

from typing import Any

import pytest

from lavalog.controller.actuator.core.podgroup import build_podgroup
from lavalog.controller.actuator.core.usage import pod_usage
from lavalog.events.decisions import PodGroupCreate
from tests.data import load_job


def decision(min_member: int, **fields: Any) -> PodGroupCreate:
    return PodGroupCreate(
        id="obs-1#0", key="default/train", job_uid="u-1", time=0.0, cause="obs-1",
        podgroup="train-u-1", min_member=min_member, queue="default", **fields,
    )  # fmt: skip


def task(name: str, replicas: int, resources: dict[str, Any], **extra: Any) -> dict[str, Any]:
    container = {"name": name, "image": "trainer", "resources": resources}
    return {
        "name": name,
        "replicas": replicas,
        "template": {"spec": {"containers": [container]}},
        **extra,
    }


MASTER = task("master", 1, {"requests": {"cpu": "100m", "memory": "128Mi"}})
WORKER = task(
    "worker",
    4,
    {
        "requests": {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "1"},
        "limits": {"cpu": "2", "memory": "1Gi", "nvidia.com/gpu": "1"},
    },
)


def job(*tasks: dict[str, Any], **metadata: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "train", "namespace": "default", "uid": "u-1", **metadata},
        "spec": {"queue": "default", "tasks": list(tasks)},
    }


def with_min(spec: dict[str, Any], minimum: int) -> dict[str, Any]:
    return {**spec, "minAvailable": minimum}


def with_priority(spec: dict[str, Any], priority_class: str) -> dict[str, Any]:
    template = {"spec": {**spec["template"]["spec"], "priorityClassName": priority_class}}
    return {**spec, "template": template}


def test_manifest() -> None:
    labelled = job(
        MASTER, WORKER, labels={"team": "a"}, annotations={"volcano.sh/sla-waiting-time": "1h"}
    )
    pg = build_podgroup(labelled, decision(5, priority_class_name="high"))
    assert pg["apiVersion"] == "scheduling.volcano.sh/v1beta1" and pg["kind"] == "PodGroup"
    assert pg["metadata"] == {
        "name": "train-u-1",
        "namespace": "default",
        "ownerReferences": [
            {
                "apiVersion": "batch.volcano.sh/v1alpha1",
                "kind": "Job",
                "name": "train",
                "uid": "u-1",
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ],
        "labels": {"team": "a"},
        "annotations": {"volcano.sh/sla-waiting-time": "1h"},
    }
    assert pg["spec"] == {
        "minMember": 5,
        "minTaskMember": {"master": 1, "worker": 4},
        "queue": "default",
        "priorityClassName": "high",
        "minResources": {
            "count/pods": "5",
            "cpu": "4100m",
            "limits.cpu": "8",
            "limits.memory": "4Gi",
            "memory": "4224Mi",
            "nvidia.com/gpu": "4",
            "pods": "5",
            "requests.cpu": "4100m",
            "requests.memory": "4224Mi",
            "requests.nvidia.com/gpu": "4",
        },
    }


@pytest.mark.parametrize(
    ("tasks", "min_member", "priorities", "expected"),
    [
        pytest.param(
            [MASTER, WORKER], 3, {}, {"pods": "3", "cpu": "2100m", "nvidia.com/gpu": "2"},
            id="min-below-task-minimums-takes-first-pods-in-order",
        ),
        pytest.param(
            [MASTER, with_min(WORKER, 2)], 3, {}, {"pods": "3", "cpu": "2100m", "nvidia.com/gpu": "2"},
            id="task-minimums-exactly",
        ),
        pytest.param(
            [MASTER, with_min(WORKER, 2)], 4, {}, {"pods": "4", "cpu": "3100m", "nvidia.com/gpu": "3"},
            id="task-minimums-then-extra-replicas",
        ),
        pytest.param(
            [MASTER, with_priority(WORKER, "high")], 3, {"high": 1000},
            {"pods": "3", "cpu": "3", "nvidia.com/gpu": "3"},
            id="higher-priority-task-first",
        ),
        pytest.param(
            [MASTER, with_priority(WORKER, "missing")], 3, {"high": 1000},
            {"pods": "3", "cpu": "2100m", "nvidia.com/gpu": "2"},
            id="unknown-priority-class-counts-as-zero",
        ),
        pytest.param(
            [MASTER, WORKER], 0, {}, {},
            id="empty-gang",
        ),
    ],
)  # fmt: skip
def test_min_resources(
    tasks: list[dict[str, Any]],
    min_member: int,
    priorities: dict[str, int],
    expected: dict[str, str],
) -> None:
    resources = build_podgroup(job(*tasks), decision(min_member), priorities=priorities)["spec"][
        "minResources"
    ]
    assert {key: resources[key] for key in expected} == expected
    assert bool(resources) == bool(expected)


def test_min_task_member_from_decision() -> None:
    pg = build_podgroup(
        job(MASTER, WORKER), decision(3, min_task_member={"master": 1, "worker": 2})
    )
    assert pg["spec"]["minTaskMember"] == {"master": 1, "worker": 2}
    assert pg["spec"]["minResources"]["cpu"] == "2100m"


def test_sample_tensorflow_job() -> None:
    pg = build_podgroup(load_job("tensorflow-dist", uid="u-1"), decision(3))
    assert pg["spec"]["minResources"] == {
        "count/pods": "3",
        "cpu": "2500m",
        "memory": "2560Mi",
        "pods": "3",
        "requests.cpu": "2500m",
        "requests.memory": "2560Mi",
    }


def usage(spec: dict[str, Any]) -> dict[str, str]:
    return {name: str(q) for name, q in pod_usage(spec).items()}


def container(name: str, *, restart: str = "", **resources: dict[str, str]) -> dict[str, Any]:
    found: dict[str, Any] = {"name": name, "resources": resources}
    if restart:
        found["restartPolicy"] = restart
    return found


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        pytest.param(
            {"containers": [container("a")]},
            {"count/pods": "1", "pods": "1"},
            id="best-effort",
        ),
        pytest.param(
            {"containers": [container("a", limits={"nvidia.com/gpu": "2", "cpu": "1"})]},
            {
                "count/pods": "1", "pods": "1", "cpu": "1", "requests.cpu": "1", "limits.cpu": "1",
                "nvidia.com/gpu": "2", "requests.nvidia.com/gpu": "2",
            },
            id="requests-default-to-limits",
        ),
        pytest.param(
            {
                "containers": [container("a", requests={"cpu": "1"}), container("b", requests={"cpu": "500m"})],
                "initContainers": [container("init", requests={"cpu": "2", "memory": "64Mi"})],
            },
            {
                "count/pods": "1", "pods": "1", "cpu": "2", "requests.cpu": "2",
                "memory": "64Mi", "requests.memory": "64Mi",
            },
            id="largest-init-container",
        ),
        pytest.param(
            {
                "containers": [container("a", requests={"cpu": "1"})],
                "initContainers": [
                    container("sidecar", restart="Always", requests={"cpu": "250m"}),
                    container("init", requests={"cpu": "1"}),
                ],
            },
            {"count/pods": "1", "pods": "1", "cpu": "1250m", "requests.cpu": "1250m"},
            id="sidecar-runs-beside-everything",
        ),
        pytest.param(
            {"containers": [container("a", requests={"hugepages-2Mi": "64Mi", "example.com/fpga": "1"})]},
            {
                "count/pods": "1", "pods": "1",
                "hugepages-2Mi": "64Mi", "requests.hugepages-2Mi": "64Mi",
                "example.com/fpga": "1", "requests.example.com/fpga": "1",
            },
            id="hugepages-and-extended",
        ),
    ],
)  # fmt: skip
def test_pod_usage(spec: dict[str, Any], expected: dict[str, str]) -> None:
    assert usage(spec) == expected
