"""A sidecar pod end to end: preempted once without using a retry, then its second
container OOMKilled; the exit-code policy sees the container that failed, and the Job's
status says in one line what happened, as the simulated API server stores it.

The second OOM uses the last retry: the job fails, and `kubectl describe vcjob` says why.

The pod's containers are `agent` (a sidecar: it exits 0 once its pod's work is over) and
`trainer`. The kubelet sorts container statuses by name, so `containerStatuses[0]` is the
agent's 0, which Volcano would read (volcano#5452): its `exitCode: 137` policy would never
act. And Volcano counts the preemption as a retry (volcano#2560): with `maxRetry: 2` the
OOM that follows would fail the job.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lavalog.controller.kafka import KafkaSettings
from lavalog.simulator import registry
from lavalog.simulator.store import Change
from tests.e2e.conftest import NAMESPACE, job_phase, running_system, version_of
from tests.simulator.test_kubectl import Kubectl, kubectl_path

__all__ = ["kubectl_path"]  # the fixture

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

NAME = "sidecar"
TRAINER = {
    "name": "trainer",
    "image": "trainer",
    "command": ["sh", "-c", "echo epoch 1; echo loading shard 7; sleep 3600"],
    "terminationMessagePolicy": "FallbackToLogsOnError",
}
AGENT = {"name": "agent", "image": "agent", "command": ["sh", "-c", "sleep 120"]}
JOB: dict[str, Any] = {
    "apiVersion": "batch.volcano.sh/v1alpha1",
    "kind": "Job",
    "metadata": {
        "name": NAME,
        "namespace": NAMESPACE,
        "annotations": {"lavalog.io/uncounted-disruptions": "*"},
    },
    "spec": {
        "schedulerName": "volcano",
        "queue": "default",
        "minAvailable": 1,
        "maxRetry": 2,
        "policies": [
            {"exitCode": 137, "action": "RestartJob"},
            {"event": "PodEvicted", "action": "RestartJob"},
        ],
        "tasks": [
            {
                "name": "train",
                "replicas": 1,
                "template": {"spec": {"restartPolicy": "Never", "containers": [TRAINER, AGENT]}},
            }
        ],
    },
}
POD = f"{NAME}-train-0"


def container_running(pod: dict[str, Any] | None, name: str) -> bool:
    statuses = ((pod or {}).get("status") or {}).get("containerStatuses") or ()
    return any(s["name"] == name and "running" in s.get("state", {}) for s in statuses)


def version(pod: dict[str, Any] | None) -> int:
    return version_of(pod) if pod is not None else -1


async def test_a_sidecar_pod_preempted_then_oom_killed(
    e2e_kafka: KafkaSettings, kubectl_path: str, tmp_path: Path
) -> None:
    states: list[dict[str, Any]] = []

    def note(change: Change) -> None:
        if change.resource is registry.JOB and change.type != "DELETED":
            state = (change.entry.obj.get("status") or {}).get("state") or {}
            if not states or states[-1] != state:
                states.append(state)

    async with running_system(e2e_kafka) as system:
        system.cluster.store.subscribe(note)
        log = system.log
        await system.submit(JOB)
        await log.until(lambda: container_running(log.pod(POD), "trainer"), 30, "trainer runs")

        system.cluster.admin.preempt(NAMESPACE, POD)
        await log.until(
            lambda: version(log.pod(POD)) == 1 and container_running(log.pod(POD), "trainer"),
            30,
            "the pod runs again, version 1",
        )
        job = await system.job(NAME)
        assert job["status"]["retryCount"] == 0  # the preemption used no retry
        node = log.pod(POD)["spec"]["nodeName"]  # type: ignore[index]

        system.cluster.admin.oom_kill(NAMESPACE, POD, "trainer")
        await log.until(
            lambda: version(log.pod(POD)) == 2 and job_phase(log.job(NAME)) == "Running",
            60,
            "restarted on the trainer's exit code, running again",
        )
        status = (await system.job(NAME))["status"]

        # a second OOM uses the last retry: the job fails, and says why where
        # `kubectl describe vcjob` shows it
        await log.until(lambda: container_running(log.pod(POD), "trainer"), 30, "trainer runs")
        last_node = log.pod(POD)["spec"]["nodeName"]  # type: ignore[index]
        system.cluster.admin.oom_kill(NAMESPACE, POD, "trainer")
        failed = await system.until_phase(NAME, ["Failed"], 60)
        described = await Kubectl(kubectl_path, system.cluster, tmp_path)("describe", "vcjob", NAME)

    assert (status["retryCount"], status["version"]) == (1, 2)
    restarts = [s for s in states if s.get("phase") == "Restarting"]
    assert [s["reason"] for s in restarts] == ["RestartJob"] * 3
    assert restarts[0]["message"].startswith(f"PodEvicted of pod {POD} on ")
    assert restarts[0]["message"].endswith(
        ", disrupted by PreemptionByScheduler, matched job policy #1; not counted as a retry"
        " (lavalog.io/uncounted-disruptions): 1 retry left (retryCount 0, maxRetry 2)"
    )
    assert restarts[1]["message"] == (
        f"PodFailed of pod {POD}, container trainer (exit code 137, OOMKilled) on {node},"
        " matched job policy #0; no retries left (retryCount 1, maxRetry 2)"
    )
    assert restarts[2]["message"].endswith("; no retries left (retryCount 2, maxRetry 2)")
    # Volcano's JobCondition has only a status and a time: the why is in state
    assert all(set(c) <= {"status", "lastTransitionTime"} for c in status["conditions"])
    state = failed["status"]["state"]
    assert (state["reason"], state["message"]) == (
        "RetriesExhausted",
        "the job ran 2 times; maxRetry is 2; the last RestartJob was on PodFailed of pod"
        f" {POD}, container trainer (exit code 137, OOMKilled) on {last_node}, matched job"
        " policy #0",
    )
    described = " ".join(described.split())  # kubectl folds long lines
    assert "Reason: RetriesExhausted" in described
    assert f"container trainer (exit code 137, OOMKilled) on {last_node}" in described


async def test_a_kubelet_eviction_restarts_without_using_a_retry(
    e2e_kafka: KafkaSettings,
) -> None:
    """Node pressure: the kubelet fails the pod (Evicted, DisruptionTarget
    TerminationByKubelet) without deleting it; the PodFailed policy restarts the job, and
    the annotation naming that reason keeps it from counting."""
    name, pod = "pressed", "pressed-train-0"
    manifest = {
        **JOB,
        "metadata": {
            "name": name,
            "namespace": NAMESPACE,
            "annotations": {"lavalog.io/uncounted-disruptions": "TerminationByKubelet"},
        },
        "spec": {
            **JOB["spec"],
            "policies": [{"event": "PodFailed", "action": "RestartJob"}],
        },
    }
    async with running_system(e2e_kafka) as system:
        log = system.log
        await system.submit(manifest)
        await log.until(lambda: container_running(log.pod(pod), "trainer"), 30, "trainer runs")
        system.cluster.admin.evict_for_pressure(NAMESPACE, pod, "memory")
        await log.until(
            lambda: version(log.pod(pod)) == 1 and job_phase(log.job(name)) == "Running",
            60,
            "restarted after the eviction, running again",
        )
        status = (await system.job(name))["status"]
    assert (status["retryCount"], status["version"]) == (0, 1)
