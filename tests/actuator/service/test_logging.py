"""The actuator's log: one info line per decision carried out, and every line about a
decision (API retries included) names its job and the decision."""

from __future__ import annotations

import asyncio

import pytest

from lavalog.controller.actuator.service.apply import Applier
from lavalog.controller.actuator.service.client import Api
from lavalog.controller.actuator.service.counters import Counters
from lavalog.controller.actuator.service.ratelimit import RateLimiter, TokenBucket
from lavalog.controller.actuator.service.timing import Timing, timing
from lavalog.controller.kube import Kube
from lavalog.events.decisions import StatusWrite
from lavalog.simulator.server import SimulatedCluster
from tests.actuator.conftest import FAST_RETRIES, fake_keys
from tests.actuator.support import decision, status, submit, tf_pods
from tests.json_logs import json_logs

pytestmark = pytest.mark.integration


async def test_what_is_carried_out_is_logged_with_its_job_retries_included(
    sim_cluster: SimulatedCluster, kube: Kube, capsys: pytest.CaptureFixture[str]
) -> None:
    async def recover_then_wait(delay: float) -> None:
        """The backoff before a retry: by then the API server has recovered."""
        sim_cluster.admin.set_api_faults(error_rate=0)
        await asyncio.sleep(delay)

    counters = Counters()
    limiter = RateLimiter(TokenBucket(qps=10_000, burst=10_000), concurrency=32)
    api = Api(kube, limiter, counters, delays=FAST_RETRIES, sleep=recover_then_wait)
    applier = Applier(api, counters, keygen=fake_keys)
    job = await submit(kube)
    key = f"default/{job['metadata']['name']}"
    pods, write = tf_pods(job), decision(StatusWrite, job, status=status("Running", 3))
    with json_logs(capsys) as lines:
        sim_cluster.admin.set_api_faults(error_rate=1.0)  # the first call fails
        await applier.apply(pods)
        await applier.apply(write)
        logged = lines()

    assert counters.retried
    retries = [line for line in logged if line["event"] == "api call retried"]
    assert retries
    assert {(line["level"], line["job"], line["decision"]) for line in retries} == {
        ("info", key, pods.id)
    }
    done = [line for line in logged if line["event"] != "api call retried"]
    # how long after its cause each was carried out (the decisions' times are made up here)
    assert all(isinstance(line["lag"], float) for line in done)
    assert [{k: v for k, v in line.items() if k not in ("timestamp", "lag")} for line in done] == [
        {
            "event": "pods created",
            "level": "info",
            "job": key,
            "decision": pods.id,
            "kind": "PodsCreate",
            "pods": 3,
            "names": [ref.name for ref in pods.pods],
        },
        {
            "event": "status written",
            "level": "info",
            "job": key,
            "decision": write.id,
            "kind": "StatusWrite",
            "phase": "Running",
            "retry_count": 0,
        },
    ]


async def test_a_decision_carried_out_says_where_its_time_went(
    sim_cluster: SimulatedCluster, kube: Kube, capsys: pytest.CaptureFixture[str]
) -> None:
    """Received 5 s after its cause, queued 1 s, one call retried after a 0.2 s backoff,
    and its calls waited for a budget of one call per 0.25 s: each part on its line."""
    waits: list[float] = []

    async def recover_then_wait(delay: float) -> None:
        sim_cluster.admin.set_api_faults(error_rate=0)
        waits.append(delay)
        await asyncio.sleep(0.2)

    counters = Counters()
    limiter = RateLimiter(TokenBucket(qps=4, burst=1), concurrency=32)
    api = Api(kube, limiter, counters, delays=FAST_RETRIES, sleep=recover_then_wait)
    applier = Applier(api, counters, keygen=fake_keys)
    job = await submit(kube)
    pods = tf_pods(job)
    spent = Timing(received=pods.time + 5.0)
    spent.started = spent.received + 1.0
    with json_logs(capsys) as lines:
        sim_cluster.admin.set_api_faults(error_rate=1.0)
        with timing(spent):
            await applier.apply(pods)
        logged = lines()

    (line,) = [line for line in logged if line["event"] == "pods created"]
    assert (line["received"], line["queued"], line["retries"]) == (5.0, 1.0, 1)
    assert line["aside"] >= 0.2
    # 4 calls (3 creates, one sent again) at 4 a second after the first token: >= 0.75 s
    assert line["limiter"] >= 0.7
    # the waits overlap: counted once, not once per call
    assert line["limiter"] < 1.5


async def test_a_decision_outside_any_lane_logs_no_timing(
    sim_cluster: SimulatedCluster, kube: Kube, capsys: pytest.CaptureFixture[str]
) -> None:
    counters = Counters()
    api = Api(kube, RateLimiter(TokenBucket(qps=1000, burst=1000), concurrency=4), counters)
    applier = Applier(api, counters, keygen=fake_keys)
    job = await submit(kube)
    with json_logs(capsys) as lines:
        await applier.apply(decision(StatusWrite, job, status=status("Running", 3)))
        logged = lines()
    assert not {"received", "queued", "limiter"} & set(logged[-1])
