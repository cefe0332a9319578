"""Pods built from task templates: the names, labels, annotations and env a user sees."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from lavalog.controller.actuator.core.pods import build_pod, build_pods
from lavalog.events.decisions import PodRef, PodsCreate
from tests.data import load_job

UID = "5f0c8a1e-93b4-4f59-a0d4-6c1f2e7b9d10"
TF = "tensorflow-dist-mnist"
PODGROUP = f"{TF}-{UID}"


@pytest.fixture
def tf_job() -> dict[str, Any]:
    return load_job("tensorflow-dist", uid=UID, status={"version": 2, "retryCount": 1})


def pod_of(job: dict[str, Any], task: str, index: int, *, version: int = 2) -> dict[str, Any]:
    name = f"{job['metadata']['name']}-{task}-{index}"
    ref = PodRef(name=name, task=task, index=index)
    return build_pod(job, ref, job_version=version, podgroup=PODGROUP)


def env_of(container: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container.get("env", [])}


def test_metadata_follows_create_job_pod(tf_job: dict[str, Any]) -> None:
    pod = pod_of(tf_job, "worker", 1)
    assert pod["apiVersion"] == "v1" and pod["kind"] == "Pod"
    assert pod["metadata"]["name"] == "tensorflow-dist-mnist-worker-1"
    assert pod["metadata"]["namespace"] == "default"
    assert pod["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "batch.volcano.sh/v1alpha1",
            "kind": "Job",
            "name": TF,
            "uid": UID,
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert pod["metadata"]["labels"] == {
        "app": "dist-mnist",
        "volcano.sh/task-index": "1",
        "volcano.sh/job-name": TF,
        "volcano.sh/task-spec": "worker",
        "volcano.sh/job-namespace": "default",
        "volcano.sh/queue-name": "default",
    }
    assert pod["metadata"]["annotations"] == {
        "volcano.sh/task-index": "1",
        "volcano.sh/task-spec": "worker",
        "scheduling.k8s.io/group-name": PODGROUP,
        "volcano.sh/job-name": TF,
        "volcano.sh/queue-name": "default",
        "volcano.sh/job-version": "2",
        "volcano.sh/template-uid": "tensorflow-dist-mnist-worker",
        "volcano.sh/job-retry-count": "1",
    }


@pytest.mark.parametrize(
    ("task", "index", "version", "expected"),
    [
        ("ps", 0, 0, {"name": "tensorflow-dist-mnist-ps-0", "index": "0", "version": "0"}),
        ("worker", 0, 3, {"name": "tensorflow-dist-mnist-worker-0", "index": "0", "version": "3"}),
        ("worker", 1, 7, {"name": "tensorflow-dist-mnist-worker-1", "index": "1", "version": "7"}),
    ],
)
def test_name_index_and_version(
    tf_job: dict[str, Any], task: str, index: int, version: int, expected: dict[str, str]
) -> None:
    pod = pod_of(tf_job, task, index, version=version)
    meta = pod["metadata"]
    assert meta["name"] == expected["name"]
    assert meta["labels"]["volcano.sh/task-index"] == expected["index"]
    assert meta["annotations"]["volcano.sh/task-index"] == expected["index"]
    assert meta["annotations"]["volcano.sh/job-version"] == expected["version"]
    assert meta["annotations"]["volcano.sh/task-spec"] == task


def test_env_order_and_values(tf_job: dict[str, Any]) -> None:
    """env, then svc, then tensorflow: VK_ before VC_, hosts from the ConfigMap, TF_CONFIG."""
    container = pod_of(tf_job, "worker", 1)["spec"]["containers"][0]
    names = [e["name"] for e in container["env"]]
    assert names == [
        "VK_TASK_INDEX",
        "VC_TASK_INDEX",
        "VC_PS_HOSTS",
        "VC_PS_NUM",
        "VC_WORKER_HOSTS",
        "VC_WORKER_NUM",
        "TF_CONFIG",
    ]
    env = env_of(container)
    assert env["VK_TASK_INDEX"] == env["VC_TASK_INDEX"] == "1"
    assert env["VC_WORKER_HOSTS"] == {
        "configMapKeyRef": {"name": "tensorflow-dist-mnist-svc", "key": "VC_WORKER_HOSTS"}
    }
    assert json.loads(env["TF_CONFIG"]) == {
        "cluster": {
            "ps": ["tensorflow-dist-mnist-ps-0.tensorflow-dist-mnist:2222"],
            "worker": [
                "tensorflow-dist-mnist-worker-0.tensorflow-dist-mnist:2222",
                "tensorflow-dist-mnist-worker-1.tensorflow-dist-mnist:2222",
            ],
        },
        "task": {"type": "worker", "index": 1},
    }


def test_spec_from_template_and_job(tf_job: dict[str, Any]) -> None:
    spec = pod_of(tf_job, "ps", 0)["spec"]
    assert spec["schedulerName"] == "volcano"
    assert spec["restartPolicy"] == "Never"
    assert spec["hostname"] == "tensorflow-dist-mnist-ps-0"
    assert spec["subdomain"] == TF
    assert spec["volumes"] == [
        {"name": "tensorflow-dist-mnist-svc", "configMap": {"name": "tensorflow-dist-mnist-svc"}}
    ]
    container = spec["containers"][0]
    assert container["command"] == ["sh", "-c", "sleep 60"]
    assert container["resources"] == {"requests": {"cpu": "500m", "memory": "512Mi"}}
    assert container["volumeMounts"] == [
        {"name": "tensorflow-dist-mnist-svc", "mountPath": "/etc/volcano"}
    ]


def test_template_is_not_mutated(tf_job: dict[str, Any]) -> None:
    before = copy.deepcopy(tf_job)
    pod_of(tf_job, "worker", 0)
    assert tf_job == before


def test_same_input_same_manifest(tf_job: dict[str, Any]) -> None:
    assert pod_of(tf_job, "worker", 1) == pod_of(tf_job, "worker", 1)


def plain_job(**spec: Any) -> dict[str, Any]:
    """A one-task job with no plugins, to see what createJobPod alone does."""
    task = {
        "name": "main",
        "replicas": 1,
        "template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}},
    }
    return {
        "metadata": {"name": "plain", "namespace": "team-a", "uid": "u-1"},
        "spec": {"queue": "q1", "tasks": [task], **spec},
    }


def test_no_plugins_no_env() -> None:
    """VC_TASK_INDEX comes from the env plugin only, as in Volcano."""
    pod = pod_of(plain_job(), "main", 0)
    assert "env" not in pod["spec"]["containers"][0]
    assert pod["spec"]["schedulerName"] == "volcano"  # Volcano's admission default
    assert "hostname" not in pod["spec"]


@pytest.mark.parametrize(
    ("template_spec", "job_spec", "expected"),
    [
        pytest.param(
            {}, {"schedulerName": "volcano"}, {"schedulerName": "volcano"}, id="job-scheduler"
        ),
        pytest.param(
            {"schedulerName": "custom"},
            {"schedulerName": "volcano"},
            {"schedulerName": "custom"},
            id="template-scheduler-wins",
        ),
        pytest.param(
            {}, {"priorityClassName": "high"}, {"priorityClassName": "high"}, id="job-priority"
        ),
        pytest.param(
            {"priorityClassName": "low"},
            {"priorityClassName": "high"},
            {"priorityClassName": "low"},
            id="template-priority-wins",
        ),
    ],
)
def test_job_defaults_fill_template(
    template_spec: dict[str, Any], job_spec: dict[str, Any], expected: dict[str, str]
) -> None:
    job = plain_job(**job_spec)
    job["spec"]["tasks"][0]["template"]["spec"].update(template_spec)
    spec = pod_of(job, "main", 0)["spec"]
    assert {key: spec[key] for key in expected} == expected


def test_job_annotations_and_labels_carried_to_pods() -> None:
    job = plain_job()
    job["metadata"]["annotations"] = {
        "volcano.sh/preemptable": "true",
        "volcano.sh/revocable-zone": "*",
        "volcano.sh/jdb-min-available": "2",
        "volcano.sh/jdb-max-unavailable": "1",
        "unrelated": "x",
    }
    job["metadata"]["labels"] = {"volcano.sh/cooldown-time": "600s", "team": "a"}
    job["spec"]["tasks"][0]["topologyPolicy"] = "best-effort"
    meta = pod_of(job, "main", 0)["metadata"]
    annotations = {k: v for k, v in meta["annotations"].items() if k.startswith("volcano.sh/")}
    assert annotations["volcano.sh/preemptable"] == "true"
    assert annotations["volcano.sh/revocable-zone"] == "*"
    assert annotations["volcano.sh/jdb-min-available"] == "2"
    assert "volcano.sh/jdb-max-unavailable" not in annotations  # min-available wins
    assert annotations["volcano.sh/numa-topology-policy"] == "best-effort"
    assert "unrelated" not in meta["annotations"]
    assert meta["labels"]["volcano.sh/cooldown-time"] == "600s"
    assert "team" not in meta["labels"]


def test_job_volumes_mounted_once_per_claim() -> None:
    job = plain_job(
        volumes=[
            {"mountPath": "/data", "volumeClaimName": "shared-data"},
            {"mountPath": "/again", "volumeClaimName": "shared-data"},
            {"mountPath": "/ckpt", "volumeClaimName": "checkpoints"},
        ]
    )
    job["spec"]["tasks"][0]["template"]["spec"]["initContainers"] = [{"name": "init", "image": "x"}]
    spec = pod_of(job, "main", 0)["spec"]
    claims = [v["persistentVolumeClaim"]["claimName"] for v in spec["volumes"]]
    assert claims == ["shared-data", "checkpoints"]
    names = [v["name"] for v in spec["volumes"]]
    assert all(n.startswith("plain-") and len(n) == len("plain-") + 12 for n in names)
    mounts = spec["containers"][0]["volumeMounts"]
    assert mounts == [
        {"name": names[0], "mountPath": "/data"},
        {"name": names[1], "mountPath": "/ckpt"},
    ]
    assert "volumeMounts" not in spec["initContainers"][0]
    assert pod_of(job, "main", 0)["spec"]["volumes"] == spec["volumes"]


def test_volume_without_claim_name_is_refused() -> None:
    job = plain_job(
        volumes=[{"mountPath": "/data", "volumeClaim": {"accessModes": ["ReadWriteOnce"]}}]
    )
    with pytest.raises(ValueError, match="volumeClaimName"):
        pod_of(job, "main", 0)


@pytest.mark.parametrize(
    ("ref", "error"),
    [
        pytest.param(
            PodRef(name="plain-main-0", task="other", index=0), KeyError, id="unknown-task"
        ),
        pytest.param(
            PodRef(name="plain-main-9", task="main", index=0), ValueError, id="name-mismatch"
        ),
    ],
)
def test_bad_references(ref: PodRef, error: type[Exception]) -> None:
    with pytest.raises(error):
        build_pod(plain_job(), ref, job_version=0, podgroup="pg")


def test_build_pods_for_a_decision(tf_job: dict[str, Any]) -> None:
    refs = tuple(
        PodRef(name=f"{TF}-{task}-{i}", task=task, index=i)
        for task, i in [("ps", 0), ("worker", 0), ("worker", 1)]
    )
    decision = PodsCreate(
        id="obs-1#0", key=f"default/{TF}", job_uid=UID, time=0.0, cause="obs-1",
        job_version=2, podgroup=PODGROUP, pods=refs,
    )  # fmt: skip
    pods = build_pods(tf_job, decision)
    assert [p["metadata"]["name"] for p in pods] == [r.name for r in refs]
    assert pods[2] == pod_of(tf_job, "worker", 1)


def test_pods_of_a_job_no_webhook_defaulted_get_volcanos_defaults() -> None:
    """Without Volcano's mutating webhook the Job keeps what the user wrote: no task name,
    no schedulerName, no minAvailable. The decider works on the defaulted spec (task
    `default0`, scheduler `volcano`), so must the pods, or they would miss the gang
    scheduler and their task."""
    job = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "bare", "namespace": "default", "uid": UID},
        "spec": {
            "tasks": [
                {
                    "replicas": 2,
                    "template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}},
                }
            ]
        },
    }
    decision = PodsCreate(
        id="d",
        key="default/bare",
        job_uid=UID,
        time=0.0,
        cause="c",
        job_version=0,
        podgroup=f"bare-{UID}",
        pods=(PodRef(name="bare-default0-1", task="default0", index=1),),
    )
    (pod,) = build_pods(job, decision)
    assert pod["metadata"]["name"] == "bare-default0-1"
    assert pod["spec"]["schedulerName"] == "volcano"
    assert pod["metadata"]["labels"]["volcano.sh/task-spec"] == "default0"
    assert pod["metadata"]["labels"]["volcano.sh/queue-name"] == "default"
    assert pod["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == f"bare-{UID}"
