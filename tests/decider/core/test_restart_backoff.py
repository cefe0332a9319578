"""Restart backoff (lavalog extension): parsing, the delay sequence, admission, and the
decider delaying restarts by a durable timer, as tables and scripted runs."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from lavalog.controller.admission import Admitted, Rejected, admit_job
from lavalog.controller.admission.restart_backoff import parse_backoff
from lavalog.controller.decider.core import JobState, initial_state, replay
from lavalog.controller.decider.core.policies import Resolution
from lavalog.controller.decider.core.restart_backoff import restart_delay, with_restart_backoff
from lavalog.controller.decider.core.triggers import Trigger
from lavalog.events.codec import encode
from lavalog.events.decisions import (
    ActionDecided,
    AnyDecision,
    JobRejected,
    PhaseChanged,
    RestartBackoffDelay,
    TimerCancelled,
    TimerScheduled,
)
from lavalog.events.extensions import RestartBackoff
from tests.decider.support import admitted, created, worker_spec
from tests.scenarios import JobScript

ANNOTATION = "lavalog.io/restart-backoff"
CONTAINER = {"containers": [{"name": "main", "image": "busybox"}]}
RESTART_ON_FAILURE = [{"event": "PodFailed", "action": "RestartJob"}]
MINUTES = 60.0

# --- the annotation ----------------------------------------------------------------------

POSITIVE = "must be a positive duration such as 500ms, 10s, 5m or 1h"
THREE = 'must be three values INITIAL,FACTOR,CAP, e.g. "10s,2,5m" (initial delay, growth factor, longest delay)'
FACTOR = "must be a number of at least 1 (1 keeps the delay fixed)"

# fmt: off
PARSING = [
    ("10s,2,5m", RestartBackoff(10.0, 2.0, 300.0)),
    (" 1s , 1.5 , 4s ", RestartBackoff(1.0, 1.5, 4.0)),
    ("500ms,1,500ms", RestartBackoff(0.5, 1.0, 0.5)),
    ("1m30s,3,1h", RestartBackoff(90.0, 3.0, 3600.0)),
    ("10s,2", f"'10s,2' {THREE}"),
    ("10s,2,5m,1h", f"'10s,2,5m,1h' {THREE}"),
    ("", f"'' {THREE}"),
    ("0s,2,5m", f"INITIAL '0s' {POSITIVE}"),
    ("-10s,2,5m", f"INITIAL '-10s' {POSITIVE}"),
    ("10,2,5m", f"INITIAL '10' {POSITIVE}"),
    ("ten seconds,2,5m", f"INITIAL 'ten seconds' {POSITIVE}"),
    ("10s,0.5,5m", f"FACTOR '0.5' {FACTOR}"),
    ("10s,x,5m", f"FACTOR 'x' {FACTOR}"),
    ("10s,inf,5m", f"FACTOR 'inf' {FACTOR}"),
    ("10s,-2,5m", f"FACTOR '-2' {FACTOR}"),
    ("10s,2,", f"CAP '' {POSITIVE}"),
    ("10s,2,5s", "CAP 5s is shorter than INITIAL 10s: no delay could reach it"),
]
# fmt: on


@pytest.mark.parametrize(("text", "expected"), PARSING)
def test_parse_backoff(text: str, expected: RestartBackoff | str) -> None:
    assert parse_backoff(text) == expected


# (backoff, restarts already done, seconds the next restart waits)
DELAYS = [
    ("10s,2,5m", 0, 10.0),
    ("10s,2,5m", 1, 20.0),
    ("10s,2,5m", 2, 40.0),
    ("10s,2,5m", 4, 160.0),
    ("10s,2,5m", 5, 300.0),  # 320 s, capped
    ("10s,2,5m", 6, 300.0),
    ("10s,2,5m", 100_000, 300.0),  # 2**100000 overflows a float: the cap, no error
    ("1s,1.5,4s", 2, 2.25),
    ("1s,1.5,4s", 3, 3.375),
    ("1s,1.5,4s", 4, 4.0),
    ("30s,1,1h", 50, 30.0),  # factor 1: a fixed delay
]


@pytest.mark.parametrize(("text", "restarts_done", "seconds"), DELAYS)
def test_delay_grows_by_the_factor_up_to_the_cap(
    text: str, restarts_done: int, seconds: float
) -> None:
    backoff = parse_backoff(text)
    assert isinstance(backoff, RestartBackoff)
    assert restart_delay(backoff, restarts_done) == seconds


# fmt: off
ADMISSION = [
    ({ANNOTATION: "10s,2,5m"}, []),
    ({ANNOTATION: "10s,2,5m", "lavalog.io/exit-codes.0": "In 1,2"}, []),
    ({ANNOTATION: "10s,2,1s"}, [(f"metadata.annotations[{ANNOTATION}]", "CAP 1s is shorter than INITIAL 10s: no delay could reach it")]),
    # every bad annotation is reported, each by its own name
    ({ANNOTATION: "fast", "lavalog.io/exit-codes.0": "In 3"}, [
        ("metadata.annotations[lavalog.io/exit-codes.0]", "the set must match the policy's own exitCode 1 (so Volcano, which reads only exitCode, does a subset of what lavalog does)"),
        (f"metadata.annotations[{ANNOTATION}]", f"'fast' {THREE}"),
    ]),
]
# fmt: on


@pytest.mark.parametrize(("annotations", "errors"), ADMISSION)
def test_admission(annotations: dict[str, str], errors: list[tuple[str, str]]) -> None:
    raw = worker_spec(policies=[{"exitCode": 1, "action": "RestartJob"}])

    result = admit_job(raw, annotations)

    if errors:
        assert isinstance(result, Rejected)
        assert [(e.path, e.message) for e in result.errors] == errors
    else:
        assert isinstance(result, Admitted)
        assert result.restart_backoff == RestartBackoff(10.0, 2.0, 300.0)


def test_without_the_annotation_a_job_has_no_backoff() -> None:
    result = admit_job(worker_spec(), {"lavalog.io/other": "x"})
    assert isinstance(result, Admitted) and result.restart_backoff is None


# --- which restarts wait ------------------------------------------------------------------

FAILED = Trigger(event="PodFailed", task="worker", pod="job-worker-0", exit_code=1)
COMMAND = Trigger(event="CommandIssued", action="RestartJob")
DUE = Trigger(
    event="PodFailed", task="worker", pod="job-worker-0", action="RestartJob", timer_id="t"
)
TEN_S = RestartBackoff(10.0, 2.0, 300.0)
SPEC = admitted(worker_spec(maxRetry=5))

# fmt: off
WHICH = [
    # backoff, retries so far, trigger, (action, policy timeout) -> (delay, backoff)
    (TEN_S, 0, FAILED, ("RestartJob", 0.0), (10.0, RestartBackoffDelay(delay=10.0, restart=1))),
    (TEN_S, 2, FAILED, ("RestartJob", 0.0), (40.0, RestartBackoffDelay(delay=40.0, restart=3))),
    (TEN_S, 1, FAILED, ("RestartTask", 0.0), (20.0, RestartBackoffDelay(delay=20.0, restart=2))),
    (TEN_S, 0, FAILED, ("RestartPod", 0.0), (10.0, RestartBackoffDelay(delay=10.0, restart=1))),
    (TEN_S, 0, FAILED, ("RestartPartition", 0.0), (10.0, RestartBackoffDelay(delay=10.0, restart=1))),
    (TEN_S, 2, FAILED, ("RestartJob", 30.0), (70.0, RestartBackoffDelay(delay=40.0, restart=3))),  # timeout, then backoff
    (TEN_S, 0, FAILED, ("AbortJob", 0.0), (0.0, None)),  # not a restart
    (TEN_S, 0, FAILED, ("SyncJob", 0.0), (0.0, None)),
    (TEN_S, 0, COMMAND, ("RestartJob", 0.0), (0.0, None)),  # a person asked for it now
    (TEN_S, 0, DUE, ("RestartJob", 0.0), (0.0, None)),  # it has waited already
    (None, 0, FAILED, ("RestartJob", 0.0), (0.0, None)),  # no annotation: Volcano's
]
# fmt: on


@pytest.mark.parametrize(("backoff", "retries", "trigger", "chosen", "expected"), WHICH)
def test_which_restarts_wait_and_how_long(
    backoff: RestartBackoff | None,
    retries: int,
    trigger: Trigger,
    chosen: tuple[str, float],
    expected: tuple[float, RestartBackoffDelay | None],
) -> None:
    state = JobState(
        key="k", phase="Running", spec=SPEC, restart_backoff=backoff, retry_count=retries
    )
    action, timeout = chosen

    resolution = with_restart_backoff(state, trigger, Resolution(action=action, delay=timeout))

    assert (resolution.delay, resolution.backoff) == expected


@pytest.mark.parametrize(
    ("phase", "waits"),
    [("Pending", True), ("Running", True), ("Restarting", False), ("Failed", False)],
)
def test_only_a_pending_or_running_job_backs_off(phase: str, waits: bool) -> None:
    state = JobState(key="k", phase=phase, spec=SPEC, restart_backoff=TEN_S)

    resolution = with_restart_backoff(state, FAILED, Resolution(action="RestartTask"))

    assert resolution.delay == (10.0 if waits else 0.0)


@pytest.mark.parametrize(("retries", "waits"), [(0, True), (1, True), (2, False)])
def test_the_restart_that_exhausts_max_retry_does_not_wait(retries: int, waits: bool) -> None:
    """maxRetry 3: the third restart fails the job; waiting would only hold it Running."""
    spec = admitted(worker_spec(maxRetry=3))
    state = JobState(
        key="k", phase="Running", spec=spec, restart_backoff=TEN_S, retry_count=retries
    )

    resolution = with_restart_backoff(state, FAILED, Resolution(action="RestartJob"))

    assert (resolution.delay > 0) == waits


# --- through the decider --------------------------------------------------------------------


def task(name: str, replicas: int, **extra: Any) -> dict[str, Any]:
    return {"name": name, "replicas": replicas, "template": {"spec": CONTAINER}, **extra}


def run(script: JobScript) -> tuple[JobState, list[AnyDecision]]:
    states: dict[str, JobState] = {}
    decisions = [d for _, ds in replay(script.events, states) for d in ds]
    return states.get(script.key, initial_state(script.key)), decisions


def of(kind: type[Any], decisions: list[AnyDecision]) -> list[Any]:
    return [d for d in decisions if isinstance(d, kind)]


def ps_and_worker(
    backoff: str | None = "10s,2,5m", policies: list[dict[str, Any]] | None = None, **spec: Any
) -> JobScript:
    """A ps that runs on and a worker, both Running; the worker fails next."""
    manifest = {
        "minAvailable": 2,
        "maxRetry": 3,
        "tasks": [task("ps", 1), task("worker", 1)],
        "policies": RESTART_ON_FAILURE if policies is None else policies,
        **spec,
    }
    annotations = {ANNOTATION: backoff} if backoff else None
    script = JobScript("bo", manifest).submit(annotations=annotations).podgroup("Inqueue")
    for phase in ("Pending", "Running"):
        script.pod("ps", 0, phase).pod("worker", 0, phase)
    return script


def test_a_restart_waits_for_its_timer_and_happens_only_when_it_fires() -> None:
    script = ps_and_worker().pod("worker", 0, "Failed", exit_code=1)
    failed_at = script.events[-1].time

    state, decisions = run(script)

    [timer] = of(TimerScheduled, decisions)
    assert (timer.action, timer.trigger, timer.fire_at) == (
        "RestartJob",
        "PodFailed",
        failed_at + 10,
    )
    assert timer.backoff == RestartBackoffDelay(delay=10.0, restart=1)
    assert of(ActionDecided, decisions) == []
    assert (state.phase, state.retry_count) == ("Running", 0)  # still, while it waits

    script.at(timer.fire_at).timer(timer.timer_id)
    state, decisions = run(script)

    fired = of(ActionDecided, decisions)
    assert [(d.action, d.timer_id, d.time) for d in fired] == [
        ("RestartJob", timer.timer_id, timer.fire_at)
    ]
    assert len(of(TimerScheduled, decisions)) == 1  # a fired timer is not backed off again
    assert (state.phase, state.retry_count, state.version) == ("Restarting", 1, 1)


def test_each_restart_waits_longer_but_the_one_that_exhausts_max_retry() -> None:
    """maxRetry 4: three restarts wait 10 s, 20 s, 40 s; the fourth fails the job
    (RetriesExhausted) at once, as nothing is left to restart."""
    script = ps_and_worker(maxRetry=4).pod("worker", 0, "Failed", exit_code=1)
    for version in range(1, 4):
        timer = of(TimerScheduled, run(script)[1])[-1]
        script.at(timer.fire_at).timer(timer.timer_id)
        script.pod_deleted("ps", 0, version=version - 1)
        script.pod_deleted("worker", 0, version=version - 1)
        for phase in ("Pending", "Running"):
            script.pod("ps", 0, phase, version=version).pod("worker", 0, phase, version=version)
        script.pod("worker", 0, "Failed", exit_code=1, version=version)
    last_failure = script.events[-1]

    state, decisions = run(script)

    timers = of(TimerScheduled, decisions)
    assert [(t.fire_at - t.time, t.backoff.restart) for t in timers] == [
        (10.0, 1),
        (20.0, 2),
        (40.0, 3),
    ]
    restarts = [(d.time, d.timer_id) for d in of(ActionDecided, decisions)]
    assert restarts == [(t.fire_at, t.timer_id) for t in timers] + [(last_failure.time, "")]
    assert (state.phase, state.reason, state.retry_count) == ("Failed", "RetriesExhausted", 4)


def test_a_policy_timeout_and_the_backoff_add_up_in_one_timer() -> None:
    policies = [{"event": "PodFailed", "action": "RestartJob", "timeout": "30s"}]
    script = ps_and_worker(policies=policies).pod("worker", 0, "Failed", exit_code=1)

    _, decisions = run(script)

    [timer] = of(TimerScheduled, decisions)
    assert timer.fire_at - timer.time == 40.0
    assert timer.backoff == RestartBackoffDelay(delay=10.0, restart=1)


def test_a_job_whose_only_pod_failed_waits_for_its_restart_instead_of_failing() -> None:
    """Volcano judges a job whose pods have all finished; a restart waiting out its
    backoff replaces them, so the job stays Running until it fires."""
    manifest = {"tasks": [task("worker", 1)], "policies": RESTART_ON_FAILURE}
    script = JobScript("one", manifest).submit(annotations={ANNOTATION: "10s,2,5m"})
    script.podgroup("Inqueue").pod("worker", 0, "Running").pod("worker", 0, "Failed", exit_code=1)

    state, decisions = run(script)
    [timer] = of(TimerScheduled, decisions)
    assert state.phase == "Running"

    script.at(timer.fire_at).timer(timer.timer_id).pod_deleted("worker", 0)
    state, decisions = run(script)

    assert [d.phase for d in of(PhaseChanged, decisions)][-2:] == ["Restarting", "Pending"]
    assert created(decisions).count("one-worker-0") == 2


def test_a_pending_backoff_is_cancelled_when_the_job_moves_on() -> None:
    script = ps_and_worker().pod("worker", 0, "Failed", exit_code=1)
    script.command("AbortJob")
    _, decisions = run(script)
    [timer] = of(TimerScheduled, decisions)

    script.at(timer.fire_at).timer(timer.timer_id)
    state, decisions = run(script)

    assert [(c.timer_id, c.reason) for c in of(TimerCancelled, decisions)] == [
        (timer.timer_id, "job entered Aborting")
    ]
    assert [d.action for d in of(ActionDecided, decisions)] == ["AbortJob"]  # no restart
    assert (state.phase, state.retry_count) == ("Aborting", 0)


def test_a_restart_command_is_not_delayed() -> None:
    script = ps_and_worker().command("RestartJob")

    state, decisions = run(script)

    assert of(TimerScheduled, decisions) == []
    assert state.phase == "Restarting"


def test_a_bad_annotation_rejects_the_job() -> None:
    script = JobScript("bad", {"tasks": [task("worker", 1)]}).submit(
        annotations={ANNOTATION: "10s,2"}
    )

    state, decisions = run(script)

    [rejected] = of(JobRejected, decisions)
    assert [e.path for e in rejected.errors] == [f"metadata.annotations[{ANNOTATION}]"]
    assert (state.phase, state.reason) == ("Failed", "InvalidSpec")
    assert ANNOTATION in state.message


def test_without_the_annotation_a_timer_is_written_as_before() -> None:
    """Old logs decode and new ones without the extension carry no `backoff` field."""
    policies = [{"event": "PodFailed", "action": "RestartJob", "timeout": "30s"}]
    script = ps_and_worker(backoff=None, policies=policies).pod("worker", 0, "Failed", exit_code=1)

    _, decisions = run(script)

    [timer] = of(TimerScheduled, decisions)
    assert timer.backoff is msgspec.UNSET
    assert b"backoff" not in encode(timer)
    assert timer.fire_at - timer.time == 30.0


def evicted_and_replaced(policy: dict[str, Any]) -> JobScript:
    """Two workers; worker 0 is evicted, its replacement (created at once) runs."""
    manifest = {"maxRetry": 3, "tasks": [task("worker", 2)], "policies": [policy]}
    script = JobScript("ev", manifest).submit(annotations={ANNOTATION: "10s,2,5m"})
    script.podgroup("Inqueue").pods("worker", 2, "Pending").pods("worker", 2, "Running")
    script.pod("worker", 0, "Running", deleting=True).pod_deleted("worker", 0)
    return script.pod("worker", 0, "Pending").pod("worker", 0, "Running")


def test_a_backed_off_restart_is_not_undone_when_its_cause_goes_away() -> None:
    """The policy restarts the job on an eviction; the backoff only postpones that, so the
    replacement pod running meanwhile does not cancel it (a timeout would: see below)."""
    script = evicted_and_replaced({"event": "PodEvicted", "action": "RestartJob"})
    [timer] = of(TimerScheduled, run(script)[1])
    script.at(timer.fire_at).timer(timer.timer_id)

    state, decisions = run(script)

    assert of(TimerCancelled, decisions) == []
    assert [(d.action, d.timer_id) for d in of(ActionDecided, decisions)] == [
        ("RestartJob", timer.timer_id)
    ]
    assert (state.phase, state.retry_count) == ("Restarting", 1)


def test_with_a_policy_timeout_the_grace_period_still_cancels_it() -> None:
    policy = {"event": "PodEvicted", "action": "RestartJob", "timeout": "30s"}
    script = evicted_and_replaced(policy)
    [timer] = of(TimerScheduled, run(script)[1])
    script.at(timer.fire_at).timer(timer.timer_id)

    state, decisions = run(script)

    assert timer.fire_at - timer.time == 40.0
    assert [c.reason for c in of(TimerCancelled, decisions)] == ["pod ev-worker-0 is Running again"]
    assert of(ActionDecided, decisions) == []
    assert (state.phase, state.retry_count) == ("Running", 0)
