"""A namespace whose ResourceQuota is full, through the whole system: the simulated API
server refuses the job's pods as Kubernetes does (403 "exceeded quota"), and lavalog
retries them as Volcano's job controller does (`handleJobError`): a Warning
`FailedCreate` Event per refusal, the job requeued with backoff; once the quota is
raised the pods are created and the job runs; if it never is, the retry limit
terminates the job with Volcano's "retry limit reached"."""

from __future__ import annotations

from typing import Any

import pytest

from bench.harness import read_topic
from lavalog.controller.kafka import KafkaSettings
from lavalog.controller.kube import MERGE_PATCH, KubeError
from lavalog.events import topics
from lavalog.events.codec import decode_decision, decode_observation
from lavalog.events.decisions import TimerScheduled
from lavalog.events.observations import CreateFailed
from lavalog.simulator import registry
from lavalog.simulator.selectors import Selector
from tests.e2e.conftest import FINISHED, NAMESPACE, System, job_phase, running_system
from tests.e2e.jobs import job, task

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

QUOTAS = f"/api/v1/namespaces/{NAMESPACE}/resourcequotas"
EVENTS = f"/api/v1/namespaces/{NAMESPACE}/events"


async def quota(system: System, pods: int) -> None:
    """The namespace's quota `q`: at most `pods` pods (created, or its limit changed)."""
    body = {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "q"}}
    hard = {"spec": {"hard": {"pods": str(pods)}}}
    try:
        await system.kube.request("GET", f"{QUOTAS}/q")
    except KubeError as exc:
        assert exc.status == 404
        await system.kube.request("POST", QUOTAS, body={**body, **hard})
        return
    await system.kube.request("PATCH", f"{QUOTAS}/q", body=hard, content_type=MERGE_PATCH)


def events_of(system: System, name: str, reason: str) -> list[dict[str, Any]]:
    return [
        entry.obj
        for entry in system.cluster.objects.store.scan(registry.EVENT, NAMESPACE, Selector())
        if entry.obj["involvedObject"]["name"] == name and entry.obj["reason"] == reason
    ]


async def refusals(kafka: KafkaSettings) -> list[CreateFailed]:
    records = await read_topic(kafka, topics.OBSERVED, kafka.observed_partitions)
    found = [decode_observation(r.value) for r in records]
    return [o for o in found if isinstance(o, CreateFailed)]


async def requeues(kafka: KafkaSettings) -> list[TimerScheduled]:
    records = await read_topic(kafka, topics.DECISIONS, kafka.decisions_partitions)
    found = [decode_decision(r.value) for r in records]
    return [d for d in found if isinstance(d, TimerScheduled) and d.trigger == "FailedCreate"]


async def test_a_full_quota_is_warned_about_and_the_job_runs_once_it_is_raised(
    e2e_kafka: KafkaSettings,
) -> None:
    async with running_system(e2e_kafka) as system:
        await quota(system, 0)
        await system.submit(job("q-raised", task("worker", 2, "sleep 100")))

        await system.log.until(
            lambda: len(events_of(system, "q-raised", "FailedCreate")) >= 2,
            60,
            "two FailedCreate Events",
        )
        warning = events_of(system, "q-raised", "FailedCreate")[0]
        assert warning["type"] == "Warning"
        assert warning["source"] == {"component": "vc-controller-manager"}
        assert warning["message"].startswith(
            "Error creating pods: [failed to create pod q-raised-worker-0, err: "
            'pods "q-raised-worker-0" is forbidden: exceeded quota: q, requested: pods=1, '
            "used: pods=0, limited: pods=0 failed to create pod q-raised-worker-1, err: "
        )
        assert job_phase(system.log.job("q-raised")) == "Pending"
        assert system.log.pods_of("q-raised") == []

        await quota(system, 10)
        ran = await system.until_phase("q-raised", ["Running"], 60)

    assert len(system.log.pods_of("q-raised")) == 2
    assert ran["status"]["retryCount"] == 0
    refused = await refusals(e2e_kafka)
    assert refused and all(r.code == 403 and r.reason == "Forbidden" for r in refused)
    # each refusal but the one the quota's raise ended was followed by a requeue
    assert len(await requeues(e2e_kafka)) >= 1


async def test_a_quota_never_raised_ends_the_job_at_volcanos_retry_limit(
    e2e_kafka: KafkaSettings,
) -> None:
    """With `--max-requeue-num 3` (Volcano's default 15 takes about 164 s): the fourth
    refusal in a row terminates the job, as Volcano's handleJobError does."""
    async with running_system(e2e_kafka, max_requeues=3) as system:
        await quota(system, 0)
        await system.submit(job("q-never", task("worker", 1, "sleep 100")))
        ended = await system.until_phase("q-never", FINISHED, 60)
        assert job_phase(ended) == "Terminated"
        limit = events_of(system, "q-never", "ExecuteAction")

    assert system.log.phase_path("q-never") == ["Pending", "Terminating", "Terminated"]
    assert [e["message"] for e in limit] == [
        "Job failed on action SyncJob for retry limit reached (on FailedCreate; job was Pending)"
    ]
    refused = [r for r in await refusals(e2e_kafka) if r.key.endswith("/q-never")]
    assert len({r.decision for r in refused}) == 4
    delays = sorted(round(t.fire_at - t.time, 3) for t in await requeues(e2e_kafka))
    assert delays == [0.005, 0.01, 0.02]
    warnings = events_of(system, "q-never", "FailedCreate")
    assert sum(int(e.get("count", 1)) for e in warnings) == 4
