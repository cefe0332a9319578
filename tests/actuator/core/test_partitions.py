"""`partitionPolicy` and `networkTopology`: admission, the partition label on pods, and the
PodGroup's `networkTopology` and `subGroupPolicy`, as Volcano writes them."""

from __future__ import annotations

from typing import Any

import pytest

from lavalog.controller.actuator.core.podgroup import build_podgroup
from lavalog.controller.actuator.core.pods import build_pod
from lavalog.controller.admission import Admitted, Rejected, admit_job
from lavalog.events.decisions import PodGroupCreate, PodRef

TEMPLATE = {"spec": {"containers": [{"name": "main", "image": "trainer"}]}}


def task(name: str, replicas: int, **extra: Any) -> dict[str, Any]:
    return {"name": name, "replicas": replicas, "template": TEMPLATE, **extra}


def partitioned(total: int = 2, size: int = 4, **extra: Any) -> dict[str, Any]:
    return {"totalPartitions": total, "partitionSize": size, **extra}


def errors(spec: dict[str, Any]) -> list[tuple[str, str]]:
    result = admit_job(spec)
    assert isinstance(result, Rejected), result
    return [(e.path, e.message) for e in result.errors]


# --- admission ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        pytest.param(partitioned(), 8, id="no-minPartitions-means-every-replica"),
        pytest.param(partitioned(minPartitions=1), 4, id="minPartitions-times-size"),
    ],
)
def test_task_minimum_from_partitions(policy: dict[str, Any], expected: int) -> None:
    result = admit_job({"tasks": [task("worker", 8, partitionPolicy=policy)]})
    assert isinstance(result, Admitted), result
    assert result.spec.tasks[0].min_available == expected
    assert result.spec.min_available == expected


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        pytest.param(
            {"tasks": [task("w", 8, partitionPolicy=partitioned(total=0))]},
            [("spec.tasks[0].partitionPolicy.totalPartitions", "0 must be greater than 0 (the number of partitions)")],
            id="totalPartitions",
        ),
        pytest.param(
            {"tasks": [task("w", 8, partitionPolicy=partitioned(size=0))]},
            [("spec.tasks[0].partitionPolicy.partitionSize", "0 must be greater than 0 (the pods of each partition)")],
            id="partitionSize",
        ),
        pytest.param(
            {"tasks": [task("w", 6, partitionPolicy=partitioned())]},
            [("spec.tasks[0].partitionPolicy", "totalPartitions * partitionSize (2 * 4) must equal the task's replicas (6)")],
            id="replicas",
        ),
        pytest.param(
            {"tasks": [task("w", 8, minAvailable=5, partitionPolicy=partitioned(minPartitions=1))]},
            [("spec.tasks[0].minAvailable", "5 is not minPartitions * partitionSize (1 * 4)")],
            id="minAvailable",
        ),
        pytest.param(
            {"tasks": [task("w", 8)], "networkTopology": {"mode": "hard", "highestTierAllowed": 1, "highestTierName": "rack"}},
            [("spec.networkTopology", "must not specify 'highestTierAllowed' and 'highestTierName' in networkTopology simultaneously")],
            id="job-topology-both-tiers",
        ),
        pytest.param(
            {"tasks": [task("w", 8, partitionPolicy=partitioned(networkTopology={"mode": "strict", "highestTierAllowed": -1}))]},
            [
                ("spec.tasks[0].partitionPolicy.networkTopology.mode", "'strict' is not a mode; use hard or soft"),
                ("spec.tasks[0].partitionPolicy.networkTopology.highestTierAllowed", "-1 is below 0"),
            ],
            id="partition-topology",
        ),
        pytest.param(
            {"tasks": [task("w", 8)], "policies": [{"event": "Unknown", "action": "RestartPartition"}]},
            [("spec.policies[0].action", "RestartPartition restarts the task or pod an event came from, but Unknown")],
            id="RestartPartition-on-a-job-wide-event",
        ),
    ],
)  # fmt: skip
def test_rejected(spec: dict[str, Any], expected: list[tuple[str, str]]) -> None:
    found = errors(spec)
    assert len(found) == len(expected), found
    for (path, message), (want_path, want) in zip(found, expected, strict=True):
        assert path == want_path
        assert message.startswith(want), message


def test_restart_partition_is_a_policy_action() -> None:
    policies = [{"event": "PodFailed", "action": "RestartPartition"}]
    spec = {"tasks": [task("w", 8, partitionPolicy=partitioned(), policies=policies)]}
    assert isinstance(admit_job(spec), Admitted)


# --- pods and PodGroup ------------------------------------------------------------------

TOPOLOGY = {"mode": "soft", "highestTierAllowed": 2}


def job() -> dict[str, Any]:
    return {
        "metadata": {"name": "llm", "namespace": "default", "uid": "u-1"},
        "spec": {
            "queue": "default",
            "networkTopology": {"mode": "hard", "highestTierName": "spine"},
            "tasks": [
                task("launcher", 1),
                task(
                    "worker",
                    8,
                    minAvailable=4,
                    partitionPolicy=partitioned(minPartitions=1, networkTopology=TOPOLOGY),
                ),
                task("eval", 2, partitionPolicy=partitioned(total=2, size=1)),
            ],
        },
    }


@pytest.mark.parametrize(
    ("name", "index", "partition"),
    [
        ("worker", 0, "0"),
        ("worker", 3, "0"),
        ("worker", 4, "1"),
        ("worker", 7, "1"),
        ("eval", 1, "1"),
    ],
)
def test_pod_partition_label(name: str, index: int, partition: str) -> None:
    ref = PodRef(name=f"llm-{name}-{index}", task=name, index=index)
    pod = build_pod(job(), ref, job_version=0, podgroup="llm-u-1")
    assert pod["metadata"]["labels"]["volcano.sh/partition-id"] == partition
    assert "volcano.sh/partition-id" not in pod["metadata"]["annotations"]


def test_unpartitioned_pod_has_no_partition_label() -> None:
    ref = PodRef(name="llm-launcher-0", task="launcher", index=0)
    pod = build_pod(job(), ref, job_version=0, podgroup="llm-u-1")
    assert "volcano.sh/partition-id" not in pod["metadata"]["labels"]


def test_podgroup_network_topology_and_sub_groups() -> None:
    decision = PodGroupCreate(
        id="o#0", key="default/llm", job_uid="u-1", time=0.0, cause="o",
        podgroup="llm-u-1", min_member=7, queue="default",
        min_task_member={"launcher": 1, "worker": 4, "eval": 2},
    )  # fmt: skip
    spec = build_podgroup(job(), decision)["spec"]
    assert spec["networkTopology"] == {"mode": "hard", "highestTierName": "spine"}
    assert spec["subGroupPolicy"] == [
        {
            "name": "worker",
            "subGroupSize": 4,
            "minSubGroups": 1,
            "labelSelector": {"matchLabels": {"volcano.sh/task-spec": "worker"}},
            "matchLabelKeys": ["volcano.sh/partition-id"],
            "networkTopology": {"mode": "soft", "highestTierAllowed": 2},
        },
        {
            "name": "eval",
            "subGroupSize": 1,
            "minSubGroups": 0,
            "labelSelector": {"matchLabels": {"volcano.sh/task-spec": "eval"}},
            "matchLabelKeys": ["volcano.sh/partition-id"],
        },
    ]
    plain = {**job(), "spec": {"queue": "default", "tasks": [task("launcher", 1)]}}
    plain_spec = build_podgroup(plain, decision)["spec"]
    assert "networkTopology" not in plain_spec and "subGroupPolicy" not in plain_spec
