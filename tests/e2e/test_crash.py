"""SIGKILL the controller mid-run and start it again: every job ends as in an uninterrupted
run (same phase, same retryCount) and no pod is created twice.

The controller runs as `lavalog run` in a child process against a simulated cluster in
this process, so the test sees every pod the moment the API server stores it and kills
the controller at exact moments (from the store's synchronous listener). Each run gets
fresh topics; the jobs and their failures (container commands) are the same in every run.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from bench.harness import LavalogRun, read_topic
from lavalog.controller.actuator.service.runner import ActuatorService
from lavalog.controller.kafka import KafkaSettings, ensure_topics
from lavalog.events import topics
from lavalog.events.codec import decode_decision
from lavalog.events.decisions import TimerCancelled, TimerScheduled
from lavalog.simulator import registry
from lavalog.simulator.store import Change
from tests.e2e.conftest import (
    ClusterLog,
    job_phase,
    make_kafka,
    poll_until,
    running_system,
    version_of,
)
from tests.e2e.jobs import job, on, task

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="module")]

JOBS = [
    # exit code 3 restarts the whole job until maxRetry (3 runs): Failed, retryCount 3
    job("c-restart", task("ps", 1), task("worker", 1, "sleep 20; exit 3"), policies=[{"exitCode": 3, "action": "RestartJob"}]),
    # RestartTask keeps the ps and the job version: Failed after 2 runs of the worker
    job("c-task", task("ps", 1, "sleep 300"), task("worker", 1, "sleep 20; exit 1", policies=[on("PodFailed", "RestartTask")]), maxRetry=2),
    job("c-complete", task("worker", 3, "sleep 40")),
    job("c-abort", task("ps", 1), task("worker", 1, "sleep 30; exit 1"), policies=[on("PodFailed", "AbortJob")]),
    job("c-taskcompleted", task("main", 2, "sleep 30", policies=[on("TaskCompleted", "CompleteJob")]), task("side", 1)),
]  # fmt: skip
NAMES = [j["metadata"]["name"] for j in JOBS]
ENDS = ("Completed", "Failed", "Aborted", "Terminated")
IDENTITY = "crash-e2e"


@dataclass(frozen=True)
class Outcome:
    #: job -> (final phase, retryCount)
    jobs: dict[str, tuple[str, int]]
    #: (pod name, job version) -> times created
    pods: Counter[tuple[str, int]]


# when to kill: a predicate over each change the API server stores --------------------------

Moment = Callable[[Change], bool]


def first_pod_created(change: Change) -> bool:
    return change.resource is registry.POD and change.type == "ADDED"


def job_restarting(change: Change) -> bool:
    return change.resource is registry.JOB and job_phase(change.entry.obj) == "Restarting"


def replacement_pod_created(change: Change) -> bool:
    """A pod of a restarted job version, or a second pod of the same name."""
    return first_pod_created(change) and version_of(change.entry.obj) >= 1


async def run(
    kafka: KafkaSettings, output: Path, moment: Moment | None = None, *, at_submission: bool = False
) -> Outcome:
    """Run the jobs to their end with one controller process, SIGKILLed once at `moment`
    (or right after the jobs are submitted) and started again."""
    async with running_system(kafka, replicas=(), time_scale=50) as system:
        controller = LavalogRun(kafka, system.cluster.kubeconfig_path, output, IDENTITY)
        killed = asyncio.Event()

        def kill_at_moment(change: Change) -> None:
            if moment is not None and not killed.is_set() and moment(change):
                controller.kill()
                killed.set()

        system.cluster.store.subscribe(kill_at_moment)
        try:
            await controller.start()
            await controller.ready()
            for manifest in JOBS:
                await system.submit(manifest)
            if at_submission:
                controller.kill()
                killed.set()
            if moment is not None or at_submission:
                async with asyncio.timeout(30):
                    await killed.wait()
                await controller.restart()
            await ended(system.log, controller)
        finally:
            await controller.stop()
        return outcome(system.log)


async def ended(log: ClusterLog, controller: LavalogRun) -> None:
    def finished() -> bool:
        return all(job_phase(log.job(n)) in ENDS and not log.live_pods(n) for n in NAMES)

    try:
        await poll_until(finished, 60, "every job ended with nothing left running")
    except AssertionError as exc:
        phases = {n: job_phase(log.job(n)) for n in NAMES}
        raise AssertionError(f"{exc}: {phases}\n{controller.tail()}") from None


def outcome(log: ClusterLog) -> Outcome:
    jobs: dict[str, tuple[str, int]] = {}
    for name in NAMES:
        found: dict[str, Any] = log.job(name) or {}
        status = found.get("status") or {}
        jobs[name] = (job_phase(found), int(status.get("retryCount", 0)))
    return Outcome(jobs, log.created_versions())


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def uninterrupted(kafka_broker: str, tmp_path_factory: pytest.TempPathFactory) -> Outcome:
    kafka = make_kafka(kafka_broker)
    await ensure_topics(kafka)
    return await run(kafka, tmp_path_factory.mktemp("uninterrupted") / "controller.log")


async def test_uninterrupted_run_is_what_the_jobs_say(uninterrupted: Outcome) -> None:
    assert uninterrupted.jobs == {
        "c-restart": ("Failed", 3),
        "c-task": ("Failed", 2),
        "c-complete": ("Completed", 0),
        "c-abort": ("Aborted", 0),
        "c-taskcompleted": ("Completed", 0),
    }
    assert max(uninterrupted.pods.values()) <= 2  # c-task's worker: once per run


@pytest.mark.parametrize(
    ("moment", "at_submission"),
    [
        pytest.param(None, True, id="right-after-submission"),
        pytest.param(first_pod_created, False, id="first-pod-created"),
        pytest.param(job_restarting, False, id="a-job-restarting"),
        pytest.param(replacement_pod_created, False, id="replacement-pod-created"),
    ],
)
async def test_sigkill_and_restart_end_as_uninterrupted(
    kafka_broker: str,
    tmp_path: Path,
    uninterrupted: Outcome,
    moment: Moment | None,
    at_submission: bool,
) -> None:
    kafka = make_kafka(kafka_broker)
    await ensure_topics(kafka)

    crashed = await run(kafka, tmp_path / "controller.log", moment, at_submission=at_submission)

    assert crashed.jobs == uninterrupted.jobs
    assert crashed.pods == uninterrupted.pods  # no pod (name, job version) created twice


async def test_decisions_carried_out_again_bring_back_no_pod(kafka_broker: str) -> None:
    """The actuator commits the first offset not carried out, so a crash repeats every
    decision of the partition after it; one slow decision (a call retried while the API
    errs) holds that offset back while later jobs run their whole course. Modelled here
    as a second actuator (a group of its own) carrying out the whole decisions log again
    once the jobs have ended: at-least-once delivery allows exactly this."""
    kafka = make_kafka(kafka_broker)
    await ensure_topics(kafka)
    async with running_system(kafka) as system:
        log = system.log
        for manifest in JOBS[:2]:  # c-restart (3 versions), c-task (RestartTask, Failed)
            await system.submit(manifest)
        await poll_until(
            lambda: all(job_phase(log.job(n)) in ENDS and not log.live_pods(n) for n in NAMES[:2]),
            30,
            "c-restart and c-task ended",
        )
        for replica in system.replicas:
            await replica.halt()
        created = log.created_versions()
        records = await read_topic(kafka, topics.DECISIONS, kafka.decisions_partitions)
        carried = [
            d
            for d in (decode_decision(r.value) for r in records)
            if not isinstance(d, TimerScheduled | TimerCancelled)
        ]
        again = ActuatorService(kube=system.kube, kafka=kafka, group_id="again")
        running = asyncio.create_task(again.run())
        try:
            counters = again.counters
            await poll_until(
                lambda: counters.handled >= len(carried),
                30,
                "every decision carried out again",
            )
        finally:
            running.cancel()
            await asyncio.gather(running, return_exceptions=True)

        assert log.created_versions() == created
        assert [n for n in NAMES[:2] if log.live_pods(n)] == []
