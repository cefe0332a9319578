"""Volcano's lifecycle scenarios through the whole system: broker, watchers, decider,
actuator and the simulated cluster.

The table follows Volcano's `test/e2e/jobseq/job_error_handling.go` and
`test/e2e/jobp/job_lifecycle.go` (and lavalog's documented differences, docs/semantics.md):
a job manifest, the steps taken on it, and what a user then sees on the Job: its
final phase, `status.retryCount`, and every phase it went through (each write of `status.conditions`).
Where Volcano's test stops at a phase that is not final (Restarting), the job here runs
on to where it ends. All jobs of the table run at once in one system (the `world`); each
test waits for its own job.

Where the path depends on when a pod ends, the pod runs until a step of the scenario
ends it (tests/e2e/faults.py): Volcano's `sleep 10s && xxx` fails the pod once the job
runs, here `Crash` does, once the controller has written Running; and a job that runs on
after a restart completes when `Finish` ends its pods, once it runs again. A pod that
ends on its own timer races the controller: the cluster runs 50 times faster than the
wall clock, and on a busy machine it ends before the controller has seen the job run.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, cast

import pytest
import pytest_asyncio

from bench.harness import read_topic
from lavalog.controller.kafka import ensure_topics
from lavalog.events import topics
from lavalog.events.codec import decode_decision, decode_observation
from lavalog.events.decisions import PhaseChanged, TimerCancelled, TimerScheduled
from lavalog.events.observations import TimerFired
from tests.e2e.conftest import (
    FINISHED,
    JOBS,
    System,
    job_phase,
    make_kafka,
    running_system,
)
from tests.e2e.faults import Crash, Evict, Fault, Finish, Issue, inject
from tests.e2e.jobs import job, on, task

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="module")]

P, R, RS = "Pending", "Running", "Restarting"
#: a delayed action's timeout longer than any wait of this module: the scenario that
#: cancels it (the replacement runs first) does not depend on how fast the controller is
CANCELLED_TIMEOUT = "10m"

SCENARIOS = [
    # -- job_error_handling.go ------------------------------------------------------------
    pytest.param(
        job("pf-restartjob", task("success", 2), task("fail", 2), policies=[on("PodFailed", "RestartJob")]),
        [Crash("fail-0")] * 3, "Failed", 3, [P, R, RS, P, R, RS, P, R, RS, "Failed"],
        id="PodFailed-RestartJob-until-maxRetry-default-3",
    ),
    pytest.param(
        job("pf-terminatejob", task("success", 2), task("fail", 2), policies=[on("PodFailed", "TerminateJob")]),
        [Crash("fail-0")], "Terminated", 0, [P, R, "Terminating", "Terminated"],
        id="PodFailed-TerminateJob",
    ),
    pytest.param(
        job("pf-abortjob", task("success", 2), task("fail", 2), policies=[on("PodFailed", "AbortJob")]),
        [Crash("fail-0")], "Aborted", 0, [P, R, "Aborting", "Aborted"],
        id="PodFailed-AbortJob",
    ),
    pytest.param(
        job("pe-restartjob", task("success", 2), task("delete", 2), policies=[on("PodEvicted", "RestartJob")]),
        [Evict("delete-0"), Finish()], "Completed", 1, [P, R, RS, P, R, "Completed"],
        id="PodEvicted-RestartJob",
    ),
    pytest.param(
        job("pe-terminatejob", task("success", 2), task("delete", 2), policies=[on("PodEvicted", "TerminateJob")]),
        [Evict("delete-0")], "Terminated", 0, [P, R, "Terminating", "Terminated"],
        id="PodEvicted-TerminateJob",
    ),
    pytest.param(
        job("pe-abortjob", task("success", 2), task("delete", 2), policies=[on("PodEvicted", "AbortJob")]),
        [Evict("delete-0")], "Aborted", 0, [P, R, "Aborting", "Aborted"],
        id="PodEvicted-AbortJob",
    ),
    pytest.param(
        job("any-restartjob", task("success", 2), task("delete", 2), policies=[on("*", "RestartJob")]),
        [Evict("delete-0")], R, 1, [P, R, RS, P, R],
        id="Any-RestartJob",
    ),
    pytest.param(
        job("tc-completejob", task("completed-task", 2), task("terminating-task", 2), policies=[on("TaskCompleted", "CompleteJob")]),
        [Finish(("completed-task-0", "completed-task-1"))], "Completed", 0, [P, R, "Completing", "Completed"],
        id="TaskCompleted-CompleteJob",
    ),
    pytest.param(
        job(
            "tf-terminatejob",
            task("success", 2),
            # restarts in place (back-off 10 s, 20 s, 40 s) until its restart count is 3
            task("failed", 2, "sleep 10; exit 1", restart="OnFailure", maxRetry=3),
            policies=[on("TaskFailed", "TerminateJob")],
        ),
        [], "Terminated", 0, [P, R, "Terminating", "Terminated"],
        id="TaskFailed-TerminateJob",
    ),
    pytest.param(
        job("ec3-restartjob", task("success", 1), task("fail", 1), policies=[{"exitCode": 3, "action": "RestartJob"}]),
        [Crash("fail-0", exit_code=3), Finish()], "Completed", 1, [P, R, RS, P, R, "Completed"],
        id="exitCode-3-RestartJob",
    ),
    pytest.param(
        job("ec1-no-policy", task("success", 1), task("fail", 1), policies=[{"exitCode": 3, "action": "RestartJob"}]),
        # no restart: the job fails once its other pod has ended too
        [Crash("fail-0", exit_code=1), Finish(("success-0",))], "Failed", 0, [P, R, "Failed"],
        id="exitCode-1-matches-no-policy",
    ),
    pytest.param(
        job("events-terminatejob", task("success", 2), task("delete", 2), policies=[{"events": ["PodEvicted", "PodFailed", "PodEvicted"], "action": "TerminateJob"}]),
        [Evict("delete-0")], "Terminated", 0, [P, R, "Terminating", "Terminated"],
        id="Events-PodEvicted-PodFailed-TerminateJob",
    ),
    pytest.param(
        job("task-pf-restartjob", task("success", 2), task("fail", 2, policies=[on("PodFailed", "RestartJob")])),
        [Crash("fail-1"), Finish()], "Completed", 1, [P, R, RS, P, R, "Completed"],
        id="task-PodFailed-RestartJob",
    ),
    pytest.param(
        job("task-pe-restartjob", task("success", 2), task("delete", 2, policies=[on("PodEvicted", "RestartJob")])),
        [Evict("delete-0"), Finish()], "Completed", 1, [P, R, RS, P, R, "Completed"],
        id="task-PodEvicted-RestartJob",
    ),
    pytest.param(
        job("task-pe-terminatejob", task("success", 2), task("delete", 2, policies=[on("PodEvicted", "TerminateJob")])),
        [Evict("delete-0")], "Terminated", 0, [P, R, "Terminating", "Terminated"],
        id="task-PodEvicted-TerminateJob",
    ),
    pytest.param(
        job("task-tc-completejob", task("completed-task", 2, policies=[on("TaskCompleted", "CompleteJob")]), task("terminating-task", 2)),
        [Finish(("completed-task-0", "completed-task-1"))], "Completed", 0, [P, R, "Completing", "Completed"],
        id="task-TaskCompleted-CompleteJob",
    ),
    pytest.param(
        job(
            "task-over-job",
            task("success", 2),
            task("fail", 2, policies=[on("PodFailed", "RestartJob")]),
            policies=[on("PodFailed", "AbortJob")],
        ),
        [Crash("fail-0"), Finish()], "Completed", 1, [P, R, RS, P, R, "Completed"],
        id="task-RestartJob-over-job-AbortJob",
    ),
    # -- job_lifecycle.go ---------------------------------------------------------------
    pytest.param(
        job("completes", task("completed-task", 2, "sleep 20")),
        [], "Completed", 0, [P, R, "Completed"],
        id="sleeping-job-completes",
    ),
    pytest.param(
        job("cpu-completes", task("complete", 1, "sleep 20", cpu="1"), policies=[on("PodFailed", "TerminateJob")]),
        [], "Completed", 0, [P, R, "Completed"],
        id="job-with-cpu-requirement-completes",
    ),
    pytest.param(
        job("exit3-abortjob", task("fail", 1, "sleep 20; exit 3"), policies=[on("PodFailed", "AbortJob")]),
        [], "Aborted", 0, [P, R, "Aborting", "Aborted"],
        id="exit-3-AbortJob",
    ),
    # -- lavalog's own stories --------------------------------------------------------------
    pytest.param(
        job("restart-task", task("ps", 1), task("worker", 2, policies=[on("PodFailed", "RestartTask")])),
        [Crash("worker-1"), Finish()], "Completed", 1, [P, R, RS, P, R, "Completed"],
        id="RestartTask-restarts-only-its-task",
    ),
    pytest.param(
        job("max-retry", task("ps", 1), task("worker", 1), maxRetry=2, policies=[on("PodFailed", "RestartJob")]),
        [Crash("worker-0")] * 2, "Failed", 2, [P, R, RS, P, R, RS, "Failed"],
        id="maxRetry-2-exhausted-fails",
    ),
    pytest.param(
        # lavalog extension: exit 137 matches the policy only through the exit-code set
        job(
            "exit-code-set", task("ps", 1), task("worker", 1), maxRetry=2,
            policies=[{"exitCode": 1, "action": "RestartJob"}],
            annotations={"lavalog.io/exit-codes.0": "In 1,137"},
        ),
        [Crash("worker-0", exit_code=137)] * 2, "Failed", 2, [P, R, RS, P, R, RS, "Failed"],
        id="exit-code-set-137-restarts-job",
    ),
    pytest.param(
        job("suspend-resume", task("worker", 2)),
        [Issue("suspend", when=R), Issue("resume", when="Aborted"), Finish()], "Completed", 0,
        [P, R, "Aborting", "Aborted", RS, P, R, "Completed"],
        id="suspend-resume-keeps-retryCount",
    ),
    pytest.param(
        job("min-success", task("a", 2), task("b", 1), minSuccess=2),
        [Finish(("a-0", "a-1"))], "Completed", 0, [P, R, "Completed"],
        id="minSuccess-reached-completes",
    ),
    pytest.param(
        job("min-success-missed", task("a", 1, "sleep 20"), task("b", 2, "sleep 20; exit 1"), minSuccess=2),
        [], "Failed", 0, [P, R, "Failed"],
        id="minSuccess-missed-fails",
    ),
    pytest.param(
        job("depends-on", task("ps", 1, "sleep 100"), task("worker", 2, "sleep 20", dependsOn={"name": ["ps"]}), minAvailable=1),
        [], "Completed", 0, [P, R, "Completed"],
        id="dependsOn",
    ),
    # -- policy timeouts ------------------------------------------------------------------
    pytest.param(
        # the replacement, Pending, is more than the job can spare (state/running.go); the
        # timeout is longer than the test waits, so the replacement always runs first
        job("evict-timeout", task("worker", 2), policies=[on("PodEvicted", "RestartJob", timeout=CANCELLED_TIMEOUT)]),
        [Evict("worker-0"), Finish()], "Completed", 0, [P, R, P, R, "Completed"],
        id="delayed-RestartJob-cancelled-when-the-replacement-runs",
    ),
    pytest.param(
        job("fail-timeout", task("ps", 1), task("worker", 1), policies=[on("PodFailed", "AbortJob", timeout="1s")]),
        [Crash("worker-0")], "Aborted", 0, [P, R, "Aborting", "Aborted"],
        id="delayed-AbortJob-fires-when-the-pod-stays-failed",
    ),
]  # fmt: skip

#: pod -> times it was created, for jobs whose story is which pods came back
CREATIONS = {
    "restart-task": {"ps-0": 1, "worker-0": 2, "worker-1": 2},
    "pe-restartjob": {"success-0": 2, "success-1": 2, "delete-0": 2, "delete-1": 2},
    "evict-timeout": {"worker-0": 2, "worker-1": 1},
    "max-retry": {"ps-0": 2, "worker-0": 2},
}

TERMINAL = ("Completed", "Failed", "Terminated")

Row = tuple[dict[str, Any], list[Fault], str, int, list[str]]


def rows() -> list[Row]:
    """The table's rows as typed tuples."""
    return [cast(Row, tuple(param.values)) for param in SCENARIOS]


@dataclass
class World:
    system: System
    faults: dict[str, asyncio.Task[None]]

    async def settled(self, name: str, path: list[str], within: float = 60.0) -> dict[str, Any]:
        """The Job once its conditions reached `path`, went past it or it finished, and
        every step of its scenario was taken (each waits for its own moment)."""
        log = self.system.log

        def settled() -> bool:
            found = log.job(name)
            went = log.phase_path(name)
            return went == path or len(went) > len(path) or job_phase(found) in TERMINAL

        await log.until(
            settled, within, lambda: f"{name} through {path}, not {log.phase_path(name)}"
        )
        await asyncio.shield(self.faults[name])
        return await self.system.job(name)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def world(kafka_broker: str) -> AsyncIterator[World]:
    """Every job of the table submitted at once to one system, its faults on their way."""
    kafka = make_kafka(kafka_broker)
    await ensure_topics(kafka)
    async with running_system(kafka, nodes=2, time_scale=50) as system:
        faults: dict[str, asyncio.Task[None]] = {}
        for manifest, injected, *_ in rows():
            name = manifest["metadata"]["name"]
            await system.submit(manifest)
            faults[name] = asyncio.create_task(inject(system, manifest, injected))
        yield World(system, faults)
        for pending in faults.values():
            pending.cancel()
        await asyncio.gather(*faults.values(), return_exceptions=True)


@pytest.mark.parametrize(("manifest", "faults", "phase", "retries", "path"), SCENARIOS)
async def test_job_goes_through_volcanos_phases(
    world: World,
    manifest: dict[str, Any],
    faults: list[Fault],
    phase: str,
    retries: int,
    path: list[str],
) -> None:
    name = manifest["metadata"]["name"]

    found = await world.settled(name, path)

    assert world.system.log.phase_path(name) == path
    assert (job_phase(found), found["status"]["retryCount"]) == (phase, retries)
    if phase in FINISHED:  # a finished job holds no resources: nothing pending or running
        log = world.system.log
        await log.until(lambda: not log.live_pods(name), 10, f"{name}: {log.live_pods(name)}")


@pytest.mark.parametrize("name", sorted(CREATIONS))
async def test_restarts_recreate_exactly_the_pods_they_restart(world: World, name: str) -> None:
    path = next(row[4] for row in rows() if row[0]["metadata"]["name"] == name)
    await world.settled(name, path)

    created = world.system.log.creations(name)

    assert {pod.removeprefix(f"{name}-"): n for pod, n in created.items()} == CREATIONS[name]


@pytest.mark.parametrize(
    ("name", "written"),
    [
        ("suspend-resume", [P, R, "Aborting", "Aborted", RS, P, R, "Completed"]),
        ("max-retry", [P, R, RS, P, R, RS, "Failed"]),
    ],
)
async def test_every_phase_is_written_to_the_job_in_order(
    world: World, name: str, written: list[str]
) -> None:
    """Volcano writes Restarting, then Pending when a suspended job resumes, and
    Restarting, then Failed when the last retry is used: each is a `status.state.phase`
    the API server stores (what `kubectl get vcjob -w` shows), not only a condition."""
    path = next(row[4] for row in rows() if row[0]["metadata"]["name"] == name)
    await world.settled(name, path)

    stored = [phase for phase, _ in world.system.log.job_phases[name]]

    assert stored == written


async def test_depends_on_creates_workers_once_the_ps_runs(world: World) -> None:
    await world.settled("depends-on", [P, R, "Completed"])
    log = world.system.log

    ps_running = next(t for phase, t in log.pod_times["depends-on-ps-0"] if phase == "Running")
    workers = [c.time for c in log.created if c.name.startswith("depends-on-worker-")]

    assert len(workers) == 2
    assert min(workers) > ps_running


async def test_delayed_actions_wait_and_are_cancelled(world: World) -> None:
    """A delayed RestartJob is cancelled once the evicted pod's replacement runs, and never
    fires; a delayed AbortJob fires its timeout after the failure, on the log's own time
    (TimerFired carries the due time), and the abort is its doing. Both were durable
    timers in the decisions log."""
    system = world.system
    log = system.log
    await world.settled("evict-timeout", [P, R, P, R, "Completed"])
    await world.settled("fail-timeout", [P, R, "Aborting", "Aborted"])
    kafka = system.kafka
    decisions = [
        decode_decision(r.value)
        for r in await read_topic(kafka, topics.DECISIONS, kafka.decisions_partitions)
    ]
    fired = {
        o.timer_id: o
        for o in (
            decode_observation(r.value)
            for r in await read_topic(kafka, topics.OBSERVED, kafka.observed_partitions)
        )
        if isinstance(o, TimerFired)
    }

    def timers(key: str) -> list[TimerScheduled | TimerCancelled]:
        return [
            d for d in decisions if d.key == key and isinstance(d, TimerScheduled | TimerCancelled)
        ]

    def uids(pod: str) -> list[str]:
        return [c.uid for c in log.created if c.name == pod]

    evicted, replacement = uids("evict-timeout-worker-0")
    scheduled, cancelled = timers("default/evict-timeout")
    assert isinstance(scheduled, TimerScheduled) and isinstance(cancelled, TimerCancelled)
    assert scheduled.cause.startswith(f"pod/{evicted}/")  # the eviction
    assert scheduled.fire_at - scheduled.time == pytest.approx(600.0)  # CANCELLED_TIMEOUT
    assert cancelled.timer_id == scheduled.timer_id
    assert cancelled.cause.startswith(f"pod/{replacement}/Running/")
    assert cancelled.time < scheduled.fire_at
    assert scheduled.timer_id not in fired

    (failed_pod,) = uids("fail-timeout-worker-0")
    (scheduled,) = timers("default/fail-timeout")
    assert isinstance(scheduled, TimerScheduled)
    assert scheduled.cause.startswith(f"pod/{failed_pod}/Failed/")
    assert scheduled.fire_at - scheduled.time == pytest.approx(1.0)
    firing = fired[scheduled.timer_id]
    assert firing.time == scheduled.fire_at
    (aborting,) = [
        d
        for d in decisions
        if d.key == "default/fail-timeout" and isinstance(d, PhaseChanged) and d.phase == "Aborting"
    ]
    assert aborting.cause == firing.id
    # and on the cluster's clock: not before the timeout had passed since the pod failed
    failed_at = next(t for phase, t in log.pod_times["fail-timeout-worker-0"] if phase == "Failed")
    assert dict(log.job_phases["fail-timeout"])["Aborting"] - failed_at >= 1.0


@pytest.mark.parametrize(
    ("manifest", "phase"),
    [
        pytest.param(job("pending-delete", task("success", 2, cpu="10000")), P, id="Pending"),
        pytest.param(job("running-delete", task("success", 2)), R, id="Running"),
        pytest.param(job("complete-delete", task("completed-task", 2, "sleep 20")), "Completed", id="Completed"),
        pytest.param(job("failed-delete", task("fail", 1, "sleep 20; exit 3"), policies=[on("PodFailed", "AbortJob")]), "Aborted", id="Aborted"),
        pytest.param(job("terminate-delete", task("fail", 1, "sleep 20; exit 3"), policies=[on("PodFailed", "TerminateJob")]), "Terminated", id="Terminated"),
    ],
)  # fmt: skip
async def test_deleted_job_is_cleaned_up(
    world: World, manifest: dict[str, Any], phase: str
) -> None:
    """job_lifecycle.go: deleting a job in any phase leaves none of its objects behind."""
    system = world.system
    name = manifest["metadata"]["name"]
    created = await system.submit(manifest)
    uid = created["metadata"]["uid"]
    await system.until_phase(name, [phase], 30)

    await system.kube.request("DELETE", f"{JOBS}/{name}")

    def cleaned_up() -> bool:
        store = system.cluster.objects.store
        return system.log.job(name) is None and not store.dependents(uid)

    def left() -> str:
        store = system.cluster.objects.store
        return f"{name} and its objects gone (left: {store.dependents(uid)})"

    await system.log.until(cleaned_up, 15, left)
    assert system.log.pods_of(name) == []
