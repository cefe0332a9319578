"""What-if with the facts of what happened: disruptions that would not have used retries,
an exit-code policy that the failed container of a sidecar pod matches, and why each
run is where it is."""

from __future__ import annotations

from typing import Any

from lavalog.controller.decider.core import replay
from lavalog.events.codec import LogEvent
from lavalog.events.observations import ContainerEnd
from lavalog.projections.core.whatif import parse_set, whatif
from tests.scenarios import JobScript

TASK = {"name": "train", "replicas": 1, "template": {"spec": {"containers": []}}}
PREEMPTED = "PreemptionByScheduler"


def recorded(script: JobScript) -> list[LogEvent]:
    return [e for o, ds in replay(script.events) for e in (o, *ds)]


def preempted_twice() -> JobScript:
    """maxRetry 2 and a PodEvicted policy: the second preemption fails the job."""
    spec: dict[str, Any] = {
        "maxRetry": 2,
        "policies": [{"event": "PodEvicted", "action": "RestartJob"}],
        "tasks": [TASK],
    }
    script = JobScript("preempted", spec).submit().podgroup("Inqueue")
    for version in (0, 1):
        script.pod("train", 0, "Pending", version=version)
        script.pod("train", 0, "Running", version=version)
        script.pod("train", 0, "Running", version=version, deleting=True, disruption=PREEMPTED)
        script.pod_deleted("train", 0, version=version, disruption=PREEMPTED)
    return script


def test_uncounted_disruptions_keep_a_job_twice_preempted_from_failing() -> None:
    events = recorded(preempted_twice())
    change = parse_set("metadata.annotations.lavalog.io/uncounted-disruptions=*")

    report = whatif(events, replay, change)

    assert report.divergence == "default/preempted@4"  # the first preemption
    assert report.recorded_phase == "Failed"
    assert report.recorded_why.startswith("RetriesExhausted: the job ran 2 times")
    assert report.alternative_phase == "Restarting"
    assert report.alternative_why == (
        "RestartJob: PodEvicted of pod preempted-train-0 on node-0, disrupted by"
        " PreemptionByScheduler, matched job policy #0; not counted as a retry"
        " (lavalog.io/uncounted-disruptions): 1 retry left (retryCount 0, maxRetry 2)"
    )
    assert report.steps[-1].fact == (
        "PodObserved preempted-train-0 Running disrupted by PreemptionByScheduler"
    )


def test_an_exit_code_policy_matches_the_failed_container_of_a_sidecar_pod() -> None:
    """Volcano would match the sidecar's 0 (containerStatuses[0]); the log holds the
    trainer's 137, which a what-if policy on 137 acts on."""
    ends = (
        ContainerEnd(name="agent", exit_code=0, reason="Completed"),
        ContainerEnd(name="trainer", exit_code=137, reason="OOMKilled"),
    )
    script = JobScript("sidecar", {"tasks": [TASK]}).submit().podgroup("Inqueue")
    script.pod("train", 0, "Pending").pod("train", 0, "Running")
    script.pod(
        "train",
        0,
        "Failed",
        exit_code=137,
        reason="OOMKilled",
        container="trainer",
        containers=ends,
    )
    policy = parse_set('spec.policies=[{"exitCode":137,"action":"RestartJob"}]')

    report = whatif(recorded(script), replay, policy)

    assert report.recorded_phase == "Failed"
    assert report.alternative_phase == "Restarting"
    assert report.steps[-1].fact == "PodObserved sidecar-train-0 Failed exit 137 in trainer"
    assert "container trainer (exit code 137, OOMKilled)" in report.alternative_why
