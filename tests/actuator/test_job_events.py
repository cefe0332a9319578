"""Events on the Job: names from decision ids, reasons and messages from the decisions."""

from __future__ import annotations

from typing import Any

from controller.actuator import job_events
from events.decisions import ActionDecided, JobRejected, PhaseChanged, PolicyRef
from events.volcano import FieldError

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
    first = job_events.event_manifest(action(), job_events.notice(action()))
    again = job_events.event_manifest(action(time=9.0), job_events.notice(action(time=9.0)))
    other = job_events.event_manifest(action(id="obs-9#1"), job_events.notice(action()))
    assert first["metadata"]["name"] == again["metadata"]["name"]
    assert first["metadata"]["name"].startswith("train.")
    assert other["metadata"]["name"] != first["metadata"]["name"]
    failed = job_events.event_manifest(action(), job_events.notice(action()), suffix="#failed")
    assert failed["metadata"]["name"] != first["metadata"]["name"]


def test_an_event_points_at_the_job_incarnation() -> None:
    event = job_events.event_manifest(action(), job_events.notice(action()))
    assert event["metadata"]["namespace"] == "team-a"
    assert event["involvedObject"] == {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "name": "train",
        "namespace": "team-a",
        "uid": "uid-1",
    }
    assert event["firstTimestamp"] == event["lastTimestamp"] == "2027-01-15T08:00:00Z"


def test_an_action_says_what_triggered_it_and_which_policy_chose_it() -> None:
    delayed = action(
        action="RestartTask",
        trigger="PodFailed",
        task="worker",
        pod="train-worker-1",
        exit_code=137,
        policy=PolicyRef(level="task", index=0, task="worker"),
        timer_id="t-1",
    )
    assert job_events.notice(delayed) == job_events.Notice(
        "Normal",
        "RestartTask",
        "RestartTask on PodFailed, pod train-worker-1, task worker, exit code 137; "
        "matched task worker policy 0; delayed by the policy's timeout (job was Running)",
    )
    job_policy = action(policy=PolicyRef(level="job", index=2))
    assert "matched job policy 2" in job_events.notice(job_policy).message


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
    assert job_events.notice(failed) == job_events.Notice(
        "Warning",
        "Failed",
        "Restarting -> Failed: MaxRetryExceeded: retried 3 times (version 3, retries 3)",
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
    notice = job_events.notice(rejected)
    assert (notice.type, notice.reason) == ("Warning", "InvalidSpec")
    assert notice.message == (
        "spec generation 1: spec.tasks: No task specified in job spec; spec.minAvailable: must be >= 0"
    )
