"""Volcano's job-controller metrics (`state/metrics.go`, `metrics/job.go`) kept from the
decider's decisions: names, labels, types and buckets as Volcano's Go client exports them."""

from __future__ import annotations

from typing import Any

from msgspec.structs import replace
from prometheus_client.parser import text_string_to_metric_families

from lavalog.controller.decider.core import initial_state, step
from lavalog.controller.decider.core.volcano_metrics import (
    LATENCY,
    LATENCY_BUCKETS,
    VolcanoMetrics,
    exponential_buckets_range,
)
from lavalog.events.observations import JobObserved, PodObserved
from tests.scenarios import EPOCH, JobScript

CONTAINER = {"containers": [{"name": "main", "image": "busybox"}]}


def spec(**extra: Any) -> dict[str, Any]:
    return {
        "queue": "research",
        "tasks": [{"name": "worker", "replicas": 2, "template": {"spec": CONTAINER}}],
        **extra,
    }


def measured(script: JobScript) -> VolcanoMetrics:
    """The metrics of deciding the script's observations one by one."""
    metrics = VolcanoMetrics()
    state = initial_state(script.key)
    for observation in script.events:
        after, decisions = step(state, observation)
        metrics.record(state, observation, decisions, after)
        state = after
    return metrics


def lines(metrics: VolcanoMetrics, prefix: str) -> list[str]:
    return [line for line in metrics.exposition().splitlines() if line.startswith(prefix)]


def completed_job(name: str) -> JobScript:
    script = JobScript(name, spec()).submit()
    first = script.events[0]
    assert isinstance(first, JobObserved)
    script.events[0] = replace(first, created=EPOCH - 2)  # the pods are made 2 s later
    script.podgroup("Inqueue")
    for index in range(2):
        script.pod("worker", index, "Pending", created=EPOCH)
    return script.pods("worker", 2, "Running").pods("worker", 2, "Succeeded")


def test_a_completed_job_is_counted_with_its_name_and_queue():
    metrics = measured(completed_job("done"))

    assert lines(metrics, "# TYPE volcano_job_completed_phase_count") == [
        "# TYPE volcano_job_completed_phase_count counter"  # Go's name: no _total
    ]
    assert lines(metrics, "volcano_job_completed_phase_count") == [
        'volcano_job_completed_phase_count{job_name="default/done",queue_name="research"} 1',
    ]
    assert lines(metrics, "volcano_job_failed_phase_count{") == []


def test_failures_are_counted_where_volcano_counts_them():
    """Running -> Failed (the tasks' outcome) and Restarting -> Failed (retries exhausted)
    count; a spec lavalog rejects does not (Volcano's webhook refuses it before it exists)."""
    outcome = JobScript("lost", spec()).submit().podgroup("Inqueue")
    outcome.pods("worker", 2, "Running").pods("worker", 2, "Failed")
    retries = JobScript(
        "tries", spec(maxRetry=1, policies=[{"event": "PodFailed", "action": "RestartJob"}])
    )
    retries.submit().podgroup("Inqueue").pods("worker", 2, "Running").pod("worker", 0, "Failed")
    rejected = JobScript("bad", spec(minAvailable=-1)).submit()

    failed = [
        lines(measured(script), "volcano_job_failed_phase_count{")
        for script in (outcome, retries, rejected)
    ]

    assert failed == [
        ['volcano_job_failed_phase_count{job_name="default/lost",queue_name="research"} 1'],
        ['volcano_job_failed_phase_count{job_name="default/tries",queue_name="research"} 1'],
        [],
    ]


def test_a_deleted_jobs_series_go():
    script = completed_job("gone").delete()

    assert lines(measured(script), "volcano_job_completed_phase_count{") == []


def test_each_pod_made_is_observed_from_its_jobs_creation():
    metrics = measured(completed_job("timed"))

    assert (metrics.latency_count, metrics.latency_sum) == (2, 4000.0)
    buckets = lines(metrics, f"{LATENCY}_bucket")
    assert len(buckets) == 31
    assert buckets[0] == f'{LATENCY}_bucket{{le="50"}} 0'
    assert buckets[-1] == f'{LATENCY}_bucket{{le="+Inf"}} 2'
    assert f'{LATENCY}_bucket{{le="2499.3588938555104"}} 2' in buckets  # first bound over 2000
    assert lines(metrics, f"{LATENCY}_sum") == [f"{LATENCY}_sum 4000"]


def test_buckets_are_client_golangs_exponential_buckets_range():
    """ExponentialBucketsRange(50, 60000, 30), computed as Go computes it; client_golang's
    own table (histogram_test.go) checks the formula."""
    assert LATENCY_BUCKETS[0] == 50 and len(LATENCY_BUCKETS) == 30
    assert abs(LATENCY_BUCKETS[-1] - 60000) < 1e-6
    golang = (1.0, 1.6681, 2.7825, 4.6415, 7.7426, 12.9154, 21.5443, 35.9381, 59.9484, 100.0)
    ours = exponential_buckets_range(1, 100, 10)
    assert all(abs(a - b) < 1e-4 for a, b in zip(ours, golang, strict=True))


def test_the_exposition_is_prometheus_text():
    families = {
        f.name: f.type
        for f in text_string_to_metric_families(measured(completed_job("p")).exposition())
    }

    assert families == {
        "volcano_job_completed_phase_count": "counter",
        "volcano_job_failed_phase_count": "counter",
        LATENCY: "histogram",
    }


def test_pods_the_controller_did_not_make_are_not_timed():
    """A pod first seen without having been asked for (taken over from Volcano, say)."""
    script = completed_job("foreign")
    stranger = next(e for e in script.events if isinstance(e, PodObserved))
    script.events = [e for e in script.events if not isinstance(e, PodObserved)]
    script.events.insert(1, stranger)  # before the gang is admitted: nothing asked for yet

    assert measured(script).latency_count == 0
