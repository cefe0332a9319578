"""Restart backoff end to end: the controller is SIGKILLed while a restart waits out its
backoff, started again, and the job restarts once, no sooner than the timer was due.

`lavalog run` runs in a child process against a simulated cluster in this process (as in
`test_crash.py`), so the test sees the Job enter Restarting the moment the API server
stores it, on the same clock the decider's timers use.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from bench.harness import LavalogRun, read_topic
from lavalog.controller.kafka import KafkaSettings, ensure_topics
from lavalog.events import topics
from lavalog.events.codec import decode_decision, decode_observation
from lavalog.events.decisions import ActionDecided, RestartBackoffDelay, TimerScheduled
from lavalog.events.observations import TimerFired
from lavalog.simulator import registry
from lavalog.simulator.store import Change
from tests.e2e.conftest import job_phase, make_kafka, poll_until, running_system
from tests.e2e.jobs import job, task

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

NAME = "b-restart"
#: the worker fails twice: the first restart waits 5 s (long enough to kill and start the
#: controller while it waits); the second exhausts maxRetry 2 and fails the job at once
JOB = job(
    NAME,
    task("ps", 1),
    task("worker", 1, "sleep 20; exit 3"),
    annotations={"lavalog.io/restart-backoff": "5s,2,1m"},
    policies=[{"exitCode": 3, "action": "RestartJob"}],
    maxRetry=2,
)


async def backoff_timer(kafka: KafkaSettings) -> TimerScheduled:
    """The job's first backoff timer, once it is in the decisions log."""
    async with asyncio.timeout(60):
        while True:
            records = await read_topic(kafka, topics.DECISIONS, kafka.decisions_partitions)
            for record in records:
                decision = decode_decision(record.value)
                if isinstance(decision, TimerScheduled) and isinstance(
                    decision.backoff, RestartBackoffDelay
                ):
                    return decision


async def test_a_backoff_timer_survives_a_controller_restart(
    kafka_broker: str, tmp_path: Path
) -> None:
    kafka = make_kafka(kafka_broker)
    await ensure_topics(kafka)
    restarting_at: list[float] = []

    def note_restarting(change: Change) -> None:
        if change.resource is registry.JOB and job_phase(change.entry.obj) == "Restarting":
            restarting_at.append(time.time())

    async with running_system(kafka, replicas=(), time_scale=50) as system:
        system.cluster.store.subscribe(note_restarting)
        controller = LavalogRun(kafka, system.cluster.kubeconfig_path, tmp_path / "log", "bo")
        try:
            await controller.start()
            await controller.ready()
            await system.submit(JOB)
            timer = await backoff_timer(kafka)
            controller.kill()
            killed_at = time.time()
            await controller.restart()
            await controller.ready()
            log = system.log

            def ended() -> bool:
                return job_phase(log.job(NAME)) == "Failed" and not log.live_pods(NAME)

            try:
                await poll_until(ended, 60, f"{NAME} failed with nothing left running")
            except AssertionError as exc:
                phase = job_phase(log.job(NAME))
                raise AssertionError(f"{exc}: {phase}\n{controller.tail()}") from None
        finally:
            await controller.stop()
        decisions = [
            decode_decision(r.value)
            for r in await read_topic(kafka, topics.DECISIONS, kafka.decisions_partitions)
        ]
        observed = [
            decode_observation(r.value)
            for r in await read_topic(kafka, topics.OBSERVED, kafka.observed_partitions)
        ]
        final = log.job(NAME) or {}
        created = log.created_versions()

    assert killed_at < timer.fire_at, "the controller was killed while the restart waited"
    assert timer.fire_at - timer.time == 5.0
    assert timer.backoff == RestartBackoffDelay(delay=5.0, restart=1)
    # the first restart came from the timer, once, and no sooner than it was due
    fired = {o.id for o in observed if isinstance(o, TimerFired) and o.timer_id == timer.timer_id}
    by_timer = {d.id for d in decisions if isinstance(d, ActionDecided) and d.timer_id}
    assert len(fired) == 1 and len(by_timer) == 1
    assert restarting_at and restarting_at[0] >= timer.fire_at
    assert (job_phase(final), final["status"].get("retryCount")) == ("Failed", 2)
    assert created == {(f"{NAME}-{t}-0", v): 1 for t in ("ps", "worker") for v in (0, 1)}
