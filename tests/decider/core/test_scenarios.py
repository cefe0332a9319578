"""Whole observation sequences through the decider: the intent of Volcano's e2e
`jobseq/job_error_handling.go` and `jobp/job_lifecycle.go`, as the decisions they need."""

from __future__ import annotations

from typing import Any

from lavalog.controller.decider.core import JobState, initial_state, replay
from lavalog.events.decisions import (
    ActionDecided,
    AnyDecision,
    JobDelete,
    JobRejected,
    PhaseChanged,
    PluginResourcesEnsure,
    PodGroupCreate,
    PodGroupDelete,
    TimerCancelled,
    TimerScheduled,
)
from tests.decider.support import created, killed, replaced
from tests.scenarios import JobScript

CONTAINER = {"containers": [{"name": "main", "image": "busybox"}]}


def task(name: str, replicas: int, **extra: Any) -> dict[str, Any]:
    return {"name": name, "replicas": replicas, "template": {"spec": CONTAINER}, **extra}


def job(*tasks: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {"tasks": list(tasks), **spec}


def run(script: JobScript) -> tuple[JobState, list[AnyDecision]]:
    states: dict[str, JobState] = {}
    decisions = [d for _, ds in replay(script.events, states) for d in ds]
    return states.get(script.key, initial_state(script.key)), decisions


def phase_path(decisions: list[AnyDecision]) -> list[str]:
    return [d.phase for d in decisions if isinstance(d, PhaseChanged)]


def actions(decisions: list[AnyDecision]) -> list[str]:
    return [d.action for d in decisions if isinstance(d, ActionDecided)]


def running(script: JobScript, task_name: str, replicas: int, version: int = 0) -> JobScript:
    script.pods(task_name, replicas, "Pending", version=version)
    return script.pods(task_name, replicas, "Running", version=version)


def test_pods_are_created_only_after_the_gang_is_admitted():
    script = JobScript("gang", job(task("worker", 2))).submit()
    _, before_admission = run(script)
    assert created(before_admission) == []

    script.podgroup("Inqueue")
    _, decisions = run(script)
    assert created(decisions) == ["gang-worker-0", "gang-worker-1"]


def test_restart_job_when_pod_failed():
    spec = job(task("worker", 2), policies=[{"event": "PodFailed", "action": "RestartJob"}])
    script = JobScript("rj", spec).submit().podgroup("Inqueue")
    running(script, "worker", 2)
    script.pod("worker", 0, "Failed", exit_code=1)
    script.pod("worker", 0, "Failed", deleting=True).pod("worker", 1, "Running", deleting=True)
    script.pod_deleted("worker", 0, phase="Failed").pod_deleted("worker", 1)
    running(script, "worker", 2, version=1)

    state, decisions = run(script)

    assert actions(decisions) == ["RestartJob"]
    assert phase_path(decisions) == ["Pending", "Running", "Restarting", "Pending", "Running"]
    assert (state.retry_count, state.version) == (1, 1)
    assert created(decisions).count("rj-worker-0") == 2


def test_terminate_job_when_pod_failed():
    spec = job(task("worker", 2), policies=[{"event": "PodFailed", "action": "TerminateJob"}])
    script = JobScript("tj", spec).submit().podgroup("Inqueue")
    running(script, "worker", 2)
    script.pod("worker", 1, "Failed", exit_code=2).pod_deleted("worker", 0)

    _state, decisions = run(script)

    assert killed(decisions) == ["tj-worker-0"]
    assert phase_path(decisions)[-2:] == ["Terminating", "Terminated"]
    assert any(isinstance(d, PodGroupDelete) for d in decisions)


def test_abort_job_when_pod_evicted():
    spec = job(task("worker", 2), policies=[{"event": "PodEvicted", "action": "AbortJob"}])
    script = JobScript("ab", spec).submit().podgroup("Inqueue")
    running(script, "worker", 2)
    script.pod("worker", 0, "Running", deleting=True)  # someone else deletes it
    script.pod_deleted("worker", 0).pod_deleted("worker", 1)

    _state, decisions = run(script)

    assert actions(decisions) == ["AbortJob"]
    assert phase_path(decisions)[-2:] == ["Aborting", "Aborted"]


def test_restart_job_on_exit_code():
    spec = job(task("mpi", 2), policies=[{"exitCode": 3, "action": "RestartJob"}])
    script = JobScript("mpi", spec).submit().podgroup("Inqueue")
    running(script, "mpi", 2)
    script.pod("mpi", 1, "Failed", exit_code=1)  # another code: no policy
    state, decisions = run(script)
    assert actions(decisions) == []

    script.pod_deleted("mpi", 1, phase="Failed").pod("mpi", 1, "Failed", exit_code=3)
    state, decisions = run(script)
    assert actions(decisions) == ["RestartJob"]
    assert state.phase == "Restarting"


def test_restart_job_when_gang_becomes_unknown():
    spec = job(task("worker", 2), policies=[{"event": "Unknown", "action": "RestartJob"}])
    script = JobScript("unk", spec).submit().podgroup("Inqueue")
    running(script, "worker", 2)
    script.podgroup("Unknown", reason="Unschedulable")

    state, decisions = run(script)

    assert actions(decisions) == ["RestartJob"]
    assert state.phase == "Restarting"


def test_an_unknown_gang_is_handled_at_every_job_version():
    """Volcano's PodGroup event carries no job version, so once a restart has bumped the
    version its Unknown only syncs; lavalog applies the policy at every version
    (docs/semantics.md)."""
    spec = job(task("worker", 2), policies=[{"event": "Unknown", "action": "RestartJob"}])
    script = JobScript("unk2", spec).submit().podgroup("Inqueue")
    running(script, "worker", 2).command("RestartJob")
    script.pod_deleted("worker", 0).pod_deleted("worker", 1)
    running(script, "worker", 2, version=1)
    script.podgroup("Running").podgroup("Unknown", reason="Unschedulable")

    state, decisions = run(script)

    assert actions(decisions) == ["RestartJob", "RestartJob"]
    assert (state.phase, state.version) == ("Restarting", 2)


def test_complete_job_when_task_completed():
    spec = job(
        task("ps", 1),
        task("worker", 2, policies=[{"event": "TaskCompleted", "action": "CompleteJob"}]),
    )
    script = JobScript("tf", spec).submit().podgroup("Inqueue")
    running(script, "ps", 1)
    running(script, "worker", 2)
    script.pod("worker", 0, "Succeeded")
    _, decisions = run(script)
    assert actions(decisions) == []  # one worker is not the task

    script.pod("worker", 1, "Succeeded").pod_deleted("ps", 0)
    _state, decisions = run(script)
    assert actions(decisions) == ["CompleteJob"]
    assert killed(decisions) == ["tf-ps-0"]
    assert phase_path(decisions)[-2:] == ["Completing", "Completed"]


def test_task_policy_wins_over_job_policy():
    spec = job(
        task("worker", 2, policies=[{"event": "PodFailed", "action": "RestartTask"}]),
        policies=[{"event": "PodFailed", "action": "AbortJob"}],
    )
    script = JobScript("prio", spec).submit().podgroup("Inqueue")
    running(script, "worker", 2)
    script.pod("worker", 1, "Failed", exit_code=1)

    _state, decisions = run(script)

    policy = next(d.policy for d in decisions if isinstance(d, ActionDecided))
    assert actions(decisions) == ["RestartTask"]
    assert policy is not None and (policy.level, policy.task, policy.index) == ("task", "worker", 0)
    assert killed(decisions) == ["prio-worker-0", "prio-worker-1"]


def test_restart_pod_replaces_only_that_pod_and_keeps_the_version():
    spec = job(task("worker", 3, policies=[{"event": "PodFailed", "action": "RestartPod"}]))
    script = JobScript("rp", spec).submit().podgroup("Inqueue")
    running(script, "worker", 3)
    script.pod("worker", 2, "Failed", exit_code=137).pod_deleted("worker", 2, phase="Failed")
    running(script, "worker", 3)

    state, decisions = run(script)

    assert (replaced(decisions), killed(decisions)) == (["rp-worker-2"], [])
    assert phase_path(decisions)[-3:] == ["Restarting", "Pending", "Running"]
    assert (state.retry_count, state.version) == (1, 0)


def test_max_retry_exhausted_fails_and_kills_remaining_pods():
    """volcano#1718: the job fails on its third failure and nothing is left running."""
    spec = job(
        task("worker", 2, policies=[{"event": "PodFailed", "action": "RestartTask"}]),
        maxRetry=3,
    )
    script = JobScript("flaky", spec).submit().podgroup("Inqueue")
    running(script, "worker", 2)
    for _ in range(3):
        script.pod("worker", 0, "Failed", exit_code=1)
        script.pod_deleted("worker", 0, phase="Failed").pod_deleted("worker", 1)
        running(script, "worker", 2)

    state, decisions = run(script)

    assert state.phase == "Failed"
    assert state.retry_count == 3
    assert [d.reason for d in decisions if isinstance(d, PhaseChanged)][-1] == "RetriesExhausted"
    assert all(pod.deleting or pod.phase == "Failed" for pod in state.pods.values())


def test_task_failed_after_in_place_restarts():
    spec = job(
        task(
            "worker",
            1,
            maxRetry=2,
            policies=[{"event": "TaskFailed", "action": "AbortJob"}],
        )
    )
    script = JobScript("tfail", spec).submit().podgroup("Inqueue")
    running(script, "worker", 1)
    script.pod("worker", 0, "Running", restarts=1)
    _, decisions = run(script)
    assert actions(decisions) == []

    script.pod("worker", 0, "Running", restarts=2)
    state, decisions = run(script)
    assert actions(decisions) == ["AbortJob"]
    assert state.phase == "Aborting"


def test_suspend_and_resume_do_not_count_as_retries():
    """volcano#3067: `vcctl job suspend` then `resume` leaves retryCount alone."""
    script = JobScript("sr", job(task("worker", 1))).submit().podgroup("Inqueue")
    running(script, "worker", 1)
    script.command("AbortJob").pod_deleted("worker", 0)
    script.command("ResumeJob")
    running(script, "worker", 1, version=2)

    state, decisions = run(script)

    assert phase_path(decisions) == [
        "Pending", "Running", "Aborting", "Aborted", "Restarting", "Pending", "Running",
    ]  # fmt: skip
    assert state.retry_count == 0
    assert state.version == 2


def test_events_of_an_older_version_only_sync():
    spec = job(task("worker", 2), policies=[{"event": "PodFailed", "action": "RestartJob"}])
    script = JobScript("stale", spec).submit().podgroup("Inqueue")
    running(script, "worker", 2)
    script.command("RestartJob")
    script.pod("worker", 1, "Failed", exit_code=1)  # an old-version pod dying late

    state, decisions = run(script)

    assert actions(decisions) == ["RestartJob"]
    assert state.retry_count == 1


def test_pod_first_seen_failed_still_fires_its_policy():
    """volcano#3967: a failure whose Running update was never seen still counts."""
    spec = job(task("worker", 1), policies=[{"event": "PodFailed", "action": "RestartJob"}])
    script = JobScript("late", spec).submit().podgroup("Inqueue")
    script.pod("worker", 0, "Failed", exit_code=1)

    _, decisions = run(script)

    assert actions(decisions) == ["RestartJob"]


def test_evicted_pod_restart_is_delayed_and_cancelled_when_the_pod_recovers():
    spec = job(
        task("worker", 2),
        policies=[{"event": "PodEvicted", "action": "RestartJob", "timeout": "5m"}],
    )
    script = JobScript("evict", spec).submit().podgroup("Inqueue")
    running(script, "worker", 2)
    script.pod("worker", 0, "Running", deleting=True).pod_deleted("worker", 0)
    _, decisions = run(script)
    timer = next(d for d in decisions if isinstance(d, TimerScheduled))
    assert timer.action == "RestartJob" and timer.fire_at == timer.time + 300
    assert created(decisions).count("evict-worker-0") == 2  # replaced at once

    script.pod("worker", 0, "Pending").pod("worker", 0, "Running")
    script.after(300).timer(timer.timer_id)
    state, decisions = run(script)

    cancelled = [d for d in decisions if isinstance(d, TimerCancelled)]
    assert [c.reason for c in cancelled] == ["pod evict-worker-0 is Running again"]
    assert actions(decisions) == []
    assert state.phase == "Running" and state.retry_count == 0


def test_delayed_restart_task_fires_when_the_pod_stays_failed():
    """volcano#4743: RestartTask with a timeout works as RestartJob with one does."""
    spec = job(
        task(
            "worker",
            2,
            policies=[{"event": "PodFailed", "action": "RestartTask", "timeout": "30s"}],
        )
    )
    script = JobScript("slow", spec).submit().podgroup("Inqueue")
    running(script, "worker", 2)
    script.pod("worker", 1, "Failed", exit_code=1)
    _, decisions = run(script)
    timer = next(d for d in decisions if isinstance(d, TimerScheduled))
    assert actions(decisions) == []

    script.after(30).timer(timer.timer_id)
    state, decisions = run(script)

    fired = [d for d in decisions if isinstance(d, ActionDecided)]
    assert [(d.action, d.trigger, d.timer_id) for d in fired] == [
        ("RestartTask", "PodFailed", timer.timer_id)
    ]
    assert state.phase == "Restarting"


def test_depends_on_creates_workers_after_the_ps_runs():
    spec = job(task("ps", 1), task("worker", 2, dependsOn={"name": ["ps"]}))
    script = JobScript("dep", spec).submit().podgroup("Inqueue")
    _, decisions = run(script)
    assert created(decisions) == ["dep-ps-0"]

    script.pod("ps", 0, "Pending").pod("ps", 0, "Running")
    _, decisions = run(script)
    assert created(decisions) == ["dep-ps-0", "dep-worker-0", "dep-worker-1"]


def test_scale_up_and_down():
    spec = job(task("worker", 2), plugins={"svc": []})
    script = JobScript("scale", spec).submit().podgroup("Inqueue")
    running(script, "worker", 2)
    script.submit(job(task("worker", 3), plugins={"svc": []}))
    _, decisions = run(script)
    assert created(decisions)[-1] == "scale-worker-2"
    ensured = [d.task_replicas for d in decisions if isinstance(d, PluginResourcesEnsure)]
    assert ensured == [{"worker": 2}, {"worker": 3}]

    script.submit(job(task("worker", 1), plugins={"svc": []}))
    _, decisions = run(script)
    assert killed(decisions) == ["scale-worker-1", "scale-worker-2"]


def test_a_scaled_gang_resizes_its_podgroup():
    """Volcano's `createOrUpdatePodGroup`: the existing PodGroup follows minAvailable and
    the tasks' minimums (job_scale_up_down.go); an update that does not touch the gang
    (a policy) leaves it alone."""
    spec = job(task("worker", 2), minAvailable=2)
    script = JobScript("resize", spec).submit().podgroup("Inqueue")
    running(script, "worker", 2)
    script.submit(job(task("worker", 4), minAvailable=4))
    _, decisions = run(script)
    groups = [d for d in decisions if isinstance(d, PodGroupCreate)]
    assert [(g.min_member, g.min_task_member) for g in groups] == [
        (2, {"worker": 2}),
        (4, {"worker": 4}),
    ]
    assert len({g.podgroup for g in groups}) == 1

    script.submit(
        job(
            task("worker", 4),
            minAvailable=4,
            policies=[{"event": "PodFailed", "action": "RestartJob"}],
        )
    )
    _, decisions = run(script)
    assert len([d for d in decisions if isinstance(d, PodGroupCreate)]) == 2


def test_ttl_after_finished_deletes_the_job():
    spec = job(task("worker", 1), ttlSecondsAfterFinished=60)
    script = JobScript("ttl", spec).submit().podgroup("Inqueue")
    running(script, "worker", 1)
    script.pod("worker", 0, "Succeeded")
    _, decisions = run(script)
    timer = next(d for d in decisions if isinstance(d, TimerScheduled))
    assert timer.action == "DeleteJob" and timer.fire_at == timer.time + 60

    script.after(60).timer(timer.timer_id)
    _, decisions = run(script)
    assert [d.reason for d in decisions if isinstance(d, JobDelete)] == [
        "ttlSecondsAfterFinished elapsed"
    ]


def test_invalid_spec_is_rejected_and_never_runs():
    spec = job(task("worker", 1, policies=[{"exitCode": 0, "action": "RestartJob"}]))
    script = JobScript("bad", spec).submit().podgroup("Inqueue")

    state, decisions = run(script)

    rejected = [d for d in decisions if isinstance(d, JobRejected)]
    assert len(rejected) == 1
    assert rejected[0].errors[0].path == "spec.tasks[0].policies[0].exitCode"
    assert state.phase == "Failed" and state.reason == "InvalidSpec"
    assert created(decisions) == []


def test_a_reused_name_starts_a_new_job():
    spec = job(task("worker", 1))
    first = JobScript("again", spec, uid="uid-a").submit().podgroup("Inqueue")
    running(first, "worker", 1)
    first.delete()
    second = JobScript("again", spec, uid="uid-b", start=first.time).submit()
    second.events = first.events + second.events

    state, _ = run(second)

    assert state.uid == "uid-b"
    assert state.phase == "Pending" and not state.pods


def test_delayed_actions_are_cancelled_when_the_job_moves_on():
    spec = job(
        task("worker", 2),
        policies=[{"event": "PodFailed", "action": "RestartJob", "timeout": "10m"}],
    )
    script = JobScript("moved", spec).submit().podgroup("Inqueue")
    running(script, "worker", 2)
    script.pod("worker", 0, "Failed", exit_code=1).command("AbortJob")

    state, decisions = run(script)

    cancelled = [d.reason for d in decisions if isinstance(d, TimerCancelled)]
    assert cancelled == ["job entered Aborting"]
    assert not state.timers


def test_restart_task_without_a_task_only_syncs():
    """`*: RestartTask` on a PodGroup going Unknown has no task to restart."""
    spec = job(task("worker", 2), policies=[{"event": "*", "action": "RestartTask"}])
    script = JobScript("notask", spec).submit().podgroup("Inqueue")
    running(script, "worker", 2)
    script.podgroup("Unknown")

    state, decisions = run(script)

    assert killed(decisions) == []
    assert state.phase == "Running" and state.retry_count == 0


def test_a_command_seen_twice_acts_once():
    """A watcher relist re-reports existing Command objects: they must not act again."""
    script = JobScript("twice", job(task("worker", 1))).submit().podgroup("Inqueue")
    running(script, "worker", 1)
    script.command("RestartJob", name="twice-restartjob-abcde")
    script.pod_deleted("worker", 0)
    running(script, "worker", 1, version=1)
    script.command("RestartJob", name="twice-restartjob-abcde")

    state, decisions = run(script)

    assert actions(decisions) == ["RestartJob"]
    assert state.retry_count == 1 and state.phase == "Running"


def test_a_restarting_job_creates_no_pod_until_the_old_ones_are_gone():
    """One killed pod goes at once, another takes its grace period: the new version's
    pods come together once both are gone, never beside an old one."""
    spec = job(
        task("ps", 1), task("worker", 1), policies=[{"event": "PodFailed", "action": "RestartJob"}]
    )
    script = JobScript("graceful", spec).submit().podgroup("Inqueue")
    running(script, "ps", 1)
    running(script, "worker", 1)
    script.pod("worker", 0, "Failed", exit_code=1).pod_deleted("worker", 0, phase="Failed")
    _, decisions = run(script)
    assert created(decisions) == ["graceful-ps-0", "graceful-worker-0"]  # the first run only

    script.pod_deleted("ps", 0)
    state, decisions = run(script)
    assert created(decisions)[2:] == ["graceful-ps-0", "graceful-worker-0"]
    assert state.phase == "Pending"


def test_a_pod_deleted_while_nobody_watched_is_forgotten_and_replaced():
    """A new leader's list lacks a pod the decider remembers: it was deleted unseen, so
    it counts as evicted (here: PodEvicted -> RestartJob) and is not remembered for ever."""
    spec = job(task("worker", 2), policies=[{"event": "PodEvicted", "action": "RestartJob"}])
    script = JobScript("unseen", spec).submit().podgroup("Inqueue")
    running(script, "worker", 2)
    script.listed(("worker", 0), ("worker", 1))
    _, decisions = run(script)
    assert actions(decisions) == []  # the list matches: nothing happens

    script.listed(("worker", 0))
    state, decisions = run(script)
    assert actions(decisions) == ["RestartJob"]
    assert "unseen-worker-1" not in state.pods


def test_a_list_lacking_a_pod_the_decider_killed_is_no_eviction():
    spec = job(task("worker", 2), policies=[{"event": "PodEvicted", "action": "RestartJob"}])
    script = JobScript("ours", spec).submit().podgroup("Inqueue")
    running(script, "worker", 2)
    script.command("AbortJob").listed()

    state, decisions = run(script)

    assert actions(decisions) == ["AbortJob"]
    assert state.phase == "Aborted" and not state.pods
