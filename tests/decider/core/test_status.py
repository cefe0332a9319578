"""`status` as Volcano writes it (volcano-sh/volcano `job_controller_actions.go`):
`conditions` keep one entry per phase (`appendJobCondition`), `state.lastTransitionTime`
moves with every change while the job syncs, `runningDuration` runs from the Job's
creation to its last phase change at a kill or an end, and `controlledResources` names
the plugins and claims the job set up."""

from __future__ import annotations

from typing import Any

import msgspec
from msgspec.structs import replace

from lavalog.controller.decider.core import replay
from lavalog.events.decisions import AnyDecision, StatusWrite
from lavalog.events.durations import format_duration
from lavalog.events.observations import JobObserved, PodObserved
from lavalog.events.timestamps import to_rfc3339
from lavalog.events.volcano.api import JobStatus
from tests.scenarios import EPOCH, JobScript

CONTAINER = {"containers": [{"name": "main", "image": "busybox"}]}
RESTART_ON_FAILURE = [{"event": "PodFailed", "action": "RestartJob"}]


def spec(**extra: Any) -> dict[str, Any]:
    return {"tasks": [{"name": "worker", "replicas": 2, "template": {"spec": CONTAINER}}], **extra}


def created_at(script: JobScript, created: float) -> JobScript:
    """The script's Job as the watchers see it, with its creationTimestamp."""
    first = script.events[0]
    assert isinstance(first, JobObserved)
    script.events[0] = replace(first, created=created)
    return script


def statuses(script: JobScript) -> list[JobStatus]:
    decisions: list[AnyDecision] = [d for _, ds in replay(script.events, {}) for d in ds]
    return [d.status for d in decisions if isinstance(d, StatusWrite)]


def running(script: JobScript, version: int = 0) -> JobScript:
    return script.pods("worker", 2, "Pending", version=version).pods(
        "worker", 2, "Running", version=version
    )


def restarted_once() -> JobScript:
    script = JobScript("rj", spec(policies=RESTART_ON_FAILURE)).submit().podgroup("Inqueue")
    running(script).pod("worker", 0, "Failed", exit_code=1)
    script.pod("worker", 0, "Failed", deleting=True).pod("worker", 1, "Running", deleting=True)
    script.pod_deleted("worker", 0, phase="Failed").pod_deleted("worker", 1)
    return running(script, version=1)


def test_conditions_keep_one_entry_per_phase_the_latest_last():
    last = statuses(restarted_once())[-1]
    assert [c.status for c in last.conditions] == ["Restarting", "Pending", "Running"]
    assert last.conditions[-1].last_transition_time == last.state.last_transition_time


def test_last_transition_time_moves_with_every_change_while_the_job_syncs():
    script = JobScript("lt", spec()).submit().podgroup("Inqueue")
    running(script)
    became_running = statuses(script)[-1]
    script.after(30).pod("worker", 0, "Succeeded")  # a count changes, the phase does not
    later = statuses(script)[-1]
    assert later.state.phase == became_running.state.phase == "Running"
    assert later.state.last_transition_time == to_rfc3339(script.time - 1)
    assert later.state.last_transition_time != became_running.state.last_transition_time
    assert later.conditions[-1].status == "Running"
    assert later.conditions[-1].last_transition_time == later.state.last_transition_time


def test_last_transition_time_stays_after_the_end_while_pods_go():
    script = JobScript("ab", spec()).submit().podgroup("Inqueue")
    running(script).command("AbortJob")
    aborting = statuses(script)[-1]
    script.after(30).pod("worker", 0, "Running", deleting=True)
    assert aborting.state.phase == "Aborting"
    assert statuses(script)[-1].state.last_transition_time == aborting.state.last_transition_time


def test_running_duration_is_creation_to_the_last_kill_or_end():
    created = EPOCH - 100
    script = created_at(restarted_once(), created)
    failure = next(e for e in script.events if isinstance(e, PodObserved) and e.phase == "Failed")
    written = statuses(script)
    first_run = written[: next(i for i, s in enumerate(written) if s.state.phase == "Restarting")]
    assert first_run and all(s.running_duration is None for s in first_run)
    # RestartJob is a kill: 106 s after creation; kept while the next run runs
    assert failure.time - created == 106
    assert (written[-1].state.phase, written[-1].running_duration) == ("Running", "1m46s")

    script.after(50).pods("worker", 2, "Succeeded", version=1)
    completed = statuses(script)[-1]
    assert completed.state.phase == "Completed"
    assert completed.running_duration == format_duration(script.time - 1 - created)


def test_controlled_resources_name_the_plugins_and_claims():
    script = (
        JobScript(
            "cr",
            spec(
                plugins={"env": [], "svc": []},
                volumes=[{"mountPath": "/data", "volumeClaimName": "shared-data"}],
            ),
        )
        .submit()
        .podgroup("Inqueue")
    )
    assert statuses(script)[-1].controlled_resources == {
        "plugin-env": "env",
        "plugin-svc": "svc",
        "volume-pvc-shared-data": "shared-data",
    }


def test_controlled_resources_leave_out_hcclrank():
    """Volcano's hcclrank plugin only annotates pods: its OnJobAdd records nothing."""
    script = JobScript("hccl", spec(plugins={"hcclrank": [], "env": []})).submit()
    assert statuses(script.podgroup("Inqueue"))[-1].controlled_resources == {"plugin-env": "env"}


def test_state_reason_and_message_say_why_the_phase_changed():
    """lavalog fills `status.state.reason`/`message` (the API's fields for it), where
    Volcano's controller leaves them empty (docs/semantics.md)."""
    script = JobScript("why", spec(policies=RESTART_ON_FAILURE, maxRetry=1)).submit()
    running(script.podgroup("Inqueue")).pod("worker", 0, "Failed", exit_code=1)
    failed = statuses(script)[-1]
    assert (failed.state.phase, failed.state.reason) == ("Failed", "RetriesExhausted")
    assert failed.state.message == (
        "the job ran 1 time; maxRetry is 1; the last RestartJob was on PodFailed of pod"
        " why-worker-0 (exit code 1) on node-0, matched job policy #0"
    )


def test_counts_after_a_kill_keep_the_pods_that_stay():
    """Volcano's killJob counts only the pods it deletes (as terminating), so its status
    reads 0 succeeded after a kill; lavalog's counts every pod (docs/semantics.md)."""
    script = JobScript("kc", spec()).submit().podgroup("Inqueue")
    running(script).pod("worker", 0, "Succeeded").command("AbortJob")
    aborting = statuses(script)[-1]
    assert aborting.state.phase == "Aborting"
    assert (aborting.succeeded, aborting.running, aborting.terminating) == (1, 0, 1)


def test_pod_counts_by_phase_as_volcano_counts_them():
    """A pod being deleted is terminating whatever its phase and leaves taskStatusCount; a
    phase Volcano has no total for is unknown; each task's phases are written in the order
    its pods were first seen in them."""
    tasks = [
        {"name": "ps", "replicas": 1, "template": {"spec": CONTAINER}},
        {"name": "worker", "replicas": 3, "template": {"spec": CONTAINER}},
    ]
    script = JobScript("counted", {"minAvailable": 4, "tasks": tasks}).submit()
    script.podgroup("Inqueue").pods("ps", 1, "Pending").pods("worker", 3, "Pending")
    script.pod("worker", 0, "Running").pod("worker", 1, "Unknown")
    script.pod("worker", 2, "Running", deleting=True)

    last = statuses(script)[-1]

    totals = (last.pending, last.running, last.succeeded, last.failed, last.terminating)
    assert (*totals, last.unknown) == (1, 1, 0, 0, 1, 1)
    assert msgspec.json.encode(last.task_status_count) == (
        b'{"ps":{"phase":{"Pending":1}},"worker":{"phase":{"Running":1,"Unknown":1}}}'
    )
