"""A whole-job kill starts a new job version, or ends the run, before it kills the run's
pods.

Found in the chaos run (`task-completed-265-side-0 v0` created twice): the actuator
carries out again, after a crash, the decisions it had not committed. With the kill
before the status, a repeated create of the old version came after the kill and before
the new version's status, so the Job still said version 0: the pod was made again, and
the kill, already carried out, had named the pod's former uid.
"""

from __future__ import annotations

from lavalog.controller.decider.core import JobState, evolve, replay
from lavalog.events.decisions import AnyDecision, PodsCreate, PodsKill, StatusWrite
from tests.scenarios import JobScript

SPEC = {
    "minAvailable": 2,
    "tasks": [
        {"name": "worker", "replicas": 2, "template": {"spec": {"containers": [{"name": "m"}]}}}
    ],
}


def running() -> JobScript:
    script = JobScript("versions", SPEC).submit().podgroup("Inqueue")
    script.pods("worker", 2, "Pending")
    return script.pods("worker", 2, "Running")


def last_step(script: JobScript) -> tuple[JobState, list[AnyDecision], JobState]:
    states: dict[str, JobState] = {}
    steps = list(replay(script.events[:-1], states))
    assert steps
    before = states[script.key]
    _, decisions = next(replay(script.events[-1:], states))
    return before, decisions, states[script.key]


def test_restart_job_writes_the_new_version_before_it_kills_the_old_pods() -> None:
    before, decisions, after = last_step(running().command("RestartJob"))
    kinds = [type(decision) for decision in decisions]
    status = next(d for d in decisions if isinstance(d, StatusWrite))
    assert status.status.version == before.version + 1
    assert kinds.index(StatusWrite) < kinds.index(PodsKill)
    # the ids still ascend in log order, and the state is the fold of the log
    assert [d.id for d in decisions] == [f"{d.cause}#{n}" for n, d in enumerate(decisions)]
    events = [*running().command("RestartJob").events[-1:], *decisions]
    folded = before
    for event in events:
        folded = evolve(folded, event)
    assert folded == after


def test_a_kill_within_one_version_keeps_its_place() -> None:
    """RestartTask keeps the version: nothing is reordered."""
    worker = {
        "name": "worker",
        "replicas": 2,
        "policies": [{"event": "PodFailed", "action": "RestartTask"}],
        "template": {"spec": {"containers": [{"name": "m"}]}},
    }
    script = JobScript("task", {"minAvailable": 2, "tasks": [worker]}).submit().podgroup("Inqueue")
    script.pods("worker", 2, "Pending").pods("worker", 2, "Running")
    before, decisions, _ = last_step(script.pod("worker", 0, "Failed", exit_code=1))
    kinds = [type(decision) for decision in decisions]
    assert PodsKill in kinds and PodsCreate not in kinds
    assert kinds.index(PodsKill) < kinds.index(StatusWrite)
    assert before.version == 0


def test_a_restart_task_that_exhausts_max_retry_fails_the_job_before_it_kills_the_pod() -> None:
    """RestartTask keeps the version, and the last retry it counts fails the job in the
    same step: the Failed status goes out first. Found in the churn run
    (`restart-task-273-worker-0 v0` created three times): with the kill first, a create of
    that pod carried out again after the kill, while the Job still said Running, made it
    anew."""
    worker = {
        "name": "worker",
        "replicas": 1,
        "policies": [{"event": "PodFailed", "action": "RestartTask"}],
        "template": {"spec": {"containers": [{"name": "m"}]}},
    }
    spec = {"minAvailable": 1, "maxRetry": 1, "tasks": [worker]}
    script = JobScript("exhausted", spec).submit().podgroup("Inqueue")
    script.pods("worker", 1, "Pending").pods("worker", 1, "Running")
    before, decisions, after = last_step(script.pod("worker", 0, "Failed", exit_code=1))
    kinds = [type(decision) for decision in decisions]
    failed = next(
        at
        for at, d in enumerate(decisions)
        if isinstance(d, StatusWrite) and d.status.state.phase == "Failed"
    )
    assert (before.version, after.version, after.phase) == (0, 0, "Failed")
    assert PodsCreate not in kinds
    assert failed < kinds.index(PodsKill)
