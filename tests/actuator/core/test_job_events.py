"""Events on the Job: names from decision ids, reasons and messages from the decisions."""

from __future__ import annotations

from typing import Any

import pytest

from lavalog.controller.actuator.core import job_events
from lavalog.events.decisions import (
    ActionDecided,
    JobRejected,
    PhaseChanged,
    PluginResourcesEnsure,
    PodFailure,
    PodGroupCreate,
    PodGroupPending,
    PodsCreate,
    PodsKill,
    PolicyRef,
    StatusWrite,
    TimerScheduled,
)
from lavalog.events.volcano.api import FieldError, JobStatus

ENVELOPE: dict[str, Any] = {
    "key": "team-a/train",
    "job_uid": "uid-1",
    "time": 1_800_000_000.5,
    "cause": "obs-9",
}


def action(**fields: Any) -> ActionDecided:
    base = {"id": "obs-9#0", "action": "RestartJob", "trigger": "PodEvicted", "phase": "Running"}
    return ActionDecided(**{**ENVELOPE, **base, **fields})


def test_the_event_name_depends_on_the_decision_id_only() -> None:
    first = job_events.event_manifest(action(), job_events.notices(action())[0])
    again = job_events.event_manifest(action(time=9.0), job_events.notices(action(time=9.0))[0])
    other = job_events.event_manifest(action(id="obs-9#1"), job_events.notices(action())[0])
    assert first["metadata"]["name"] == again["metadata"]["name"]
    assert first["metadata"]["name"].startswith("train.")
    assert other["metadata"]["name"] != first["metadata"]["name"]
    failed = job_events.event_manifest(action(), job_events.notices(action())[0], suffix="#failed")
    assert failed["metadata"]["name"] != first["metadata"]["name"]


def test_an_event_points_at_the_job_incarnation() -> None:
    event = job_events.event_manifest(action(), job_events.notices(action())[0])
    assert event["metadata"]["namespace"] == "team-a"
    assert event["involvedObject"] == {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "name": "train",
        "namespace": "team-a",
        "uid": "uid-1",
    }
    assert event["firstTimestamp"] == event["lastTimestamp"] == "2027-01-15T08:00:00Z"
    # Volcano's controller records under this component: alerts select on it
    assert event["source"] == {"component": "vc-controller-manager"}
    assert event["reportingComponent"] == "vc-controller-manager"


def test_an_action_is_volcanos_execute_action_with_lavalogs_detail_after() -> None:
    """Volcano: `ExecuteAction`, "Start to execute action RestartTask "; lavalog then says
    what triggered it and which policy chose it."""
    delayed = action(
        action="RestartTask",
        trigger="PodFailed",
        task="worker",
        pod="train-worker-1",
        exit_code=137,
        policy=PolicyRef(level="task", index=0, task="worker"),
        timer_id="t-1",
    )
    assert job_events.notices(delayed) == (
        job_events.Notice(
            "Normal",
            "ExecuteAction",
            "Start to execute action RestartTask (on PodFailed, pod train-worker-1, task worker, "
            "exit code 137; matched task worker policy 0; delayed by the policy's timeout; "
            "job was Running)",
        ),
    )
    job_policy = action(policy=PolicyRef(level="job", index=2))
    assert "matched job policy 2" in job_events.notices(job_policy)[0].message


def test_an_action_on_a_pod_failure_says_how_the_pod_failed() -> None:
    """Which container, its reason, the node, who disrupted it, and that a restart on a
    disruption counted no retry (lavalog.io/uncounted-disruptions)."""
    oom = action(
        trigger="PodFailed",
        task="train",
        pod="train-0",
        exit_code=137,
        policy=PolicyRef(level="job", index=0),
        failure=PodFailure(container="trainer", reason="OOMKilled", node="node-2"),
    )
    assert job_events.notices(oom)[0].message == (
        "Start to execute action RestartJob (on PodFailed, pod train-0, task train, container"
        " trainer, exit code 137, OOMKilled, node node-2; matched job policy 0; job was Running)"
    )
    preempted = action(
        pod="train-0",
        failure=PodFailure(node="node-1", disruption="PreemptionByScheduler"),
        uncounted=True,
    )
    assert job_events.notices(preempted)[0].message == (
        "Start to execute action RestartJob (on PodEvicted, pod train-0, node node-1,"
        " disruption PreemptionByScheduler; not counted as a retry; job was Running)"
    )


def test_a_command_is_volcanos_command_issued_then_execute_action() -> None:
    issued, executed = job_events.notices(action(action="AbortJob", trigger="CommandIssued"))
    assert issued == job_events.Notice(
        "Normal",
        "CommandIssued",
        "Start to execute command AbortJob, and clean it up to make sure executed not more than once.",
    )
    assert (executed.reason, executed.message.startswith("Start to execute action AbortJob ")) == (
        "ExecuteAction",
        True,
    )


def test_a_delayed_action_is_announced_with_its_delay_and_a_ttl_is_not() -> None:
    timer = TimerScheduled(
        **ENVELOPE,
        id="obs-9#2",
        timer_id="t-1",
        fire_at=ENVELOPE["time"] + 90,
        action="RestartJob",
        trigger="PodEvicted",
        pod="train-worker-0",
    )
    assert job_events.notices(timer) == (
        job_events.Notice(
            "Normal",
            "ExecuteAction",
            "Execute action RestartJob after 1m30s (on PodEvicted, pod train-worker-0)",
        ),
    )
    ttl = TimerScheduled(
        **{**ENVELOPE, "cause": "c"},
        id="c#0",
        timer_id="c#timer",
        fire_at=1.0,
        action="DeleteJob",
        trigger="",
    )
    assert job_events.notices(ttl) == ()


def test_an_unschedulable_gang_is_volcanos_podgroup_pending() -> None:
    pending = PodGroupPending(
        **ENVELOPE,
        id="obs-9#0",
        podgroup="train-uid-1",
        reason="NotEnoughResources",
        message="2/4 tasks in gang unschedulable: 2 Insufficient cpu",
    )
    assert job_events.notices(pending) == (
        job_events.Notice(
            "Warning",
            "PodGroupPending",
            "PodGroup team-a:train unschedulable, reason: 2/4 tasks in gang unschedulable: "
            "2 Insufficient cpu (NotEnoughResources, PodGroup train-uid-1)",
        ),
    )


@pytest.mark.parametrize(
    ("decision", "reason", "start"),
    [
        (
            PodsCreate(**ENVELOPE, id="d", job_version=0, podgroup="pg", pods=()),
            "FailedCreate",
            "Error creating pods: ",
        ),
        (
            PodsKill(**ENVELOPE, id="d", reason="RestartJob", pods=()),
            "FailedDelete",
            "Error deleting pods: ",
        ),
        (
            PodGroupCreate(**ENVELOPE, id="d", podgroup="pg", min_member=1, queue="q"),
            "PodGroupError",
            "Failed to create PodGroup, err: ",
        ),
        (
            PluginResourcesEnsure(**ENVELOPE, id="d", plugins={}, task_replicas={}),
            "PluginError",
            "Execute plugin when job add failed, err: ",
        ),
        (
            StatusWrite(**ENVELOPE, id="d", status=JobStatus()),
            "JobStatusError",
            "Failed to update job status, err: ",
        ),
    ],
)
def test_failures_carry_volcanos_reasons(decision, reason, start) -> None:
    notice = job_events.failure(decision, RuntimeError("422 Invalid"))
    assert (notice.type, notice.reason) == ("Warning", reason)
    assert notice.message == f"{start}422 Invalid (decision d)"


def test_a_phase_change_names_the_phase_and_a_failure_warns() -> None:
    failed = PhaseChanged(
        **ENVELOPE,
        id="obs-9#1",
        previous="Restarting",
        phase="Failed",
        reason="MaxRetryExceeded",
        message="retried 3 times",
        retry_count=3,
        version=3,
    )
    assert job_events.notices(failed, phase_events=True) == (
        job_events.Notice(
            "Warning",
            "Failed",
            "Restarting -> Failed: MaxRetryExceeded: retried 3 times (version 3, retries 3)",
        ),
    )


def test_phase_changes_are_no_events_unless_asked_for_as_volcano_records_none() -> None:
    """Volcano's controller records no Event when a job goes Pending or Running."""
    pending = PhaseChanged(**ENVELOPE, id="obs-9#1", previous="", phase="Pending")
    assert job_events.notices(pending) == ()
    assert job_events.reported(pending) == []
    (event,) = job_events.reported(pending, phase_events=True)
    assert (event["reason"], event["message"]) == (
        "Pending",
        "new -> Pending (version 0, retries 0)",
    )


def test_a_rejection_lists_every_error_with_its_path() -> None:
    rejected = JobRejected(
        **ENVELOPE,
        id="obs-9#0",
        generation=1,
        errors=(
            FieldError("spec.tasks", "No task specified in job spec"),
            FieldError("spec.minAvailable", "must be >= 0"),
        ),
    )
    (notice,) = job_events.notices(rejected)
    assert (notice.type, notice.reason) == ("Warning", "InvalidSpec")
    assert notice.message == (
        "spec generation 1: spec.tasks: No task specified in job spec; spec.minAvailable: must be >= 0"
    )


def test_the_event_name_of_a_job_with_a_very_long_name_is_still_a_name() -> None:
    long = action(key="team-a/" + "j" * 253)
    name = job_events.event_manifest(long, job_events.notices(long)[0])["metadata"]["name"]
    assert len(name) == 253 and name.startswith("jjj")
