"""The actuator's API client against the simulated API server: a 429 is retried no sooner
than its Retry-After says, and every request is counted by verb, resource and purpose."""

from __future__ import annotations

import pytest

from lavalog.controller.actuator.core.calls import Call, Purpose
from lavalog.controller.actuator.service.client import Api
from lavalog.controller.actuator.service.counters import Counters
from lavalog.controller.actuator.service.ratelimit import RateLimiter, TokenBucket
from lavalog.controller.kube import Kube
from lavalog.simulator.server import SimulatedCluster
from tests.actuator.conftest import FAST_RETRIES
from tests.actuator.support import job_path, submit

pytestmark = pytest.mark.integration


async def test_a_throttled_request_waits_what_the_server_asks_before_it_goes_again(
    sim_cluster: SimulatedCluster, kube: Kube
) -> None:
    job = await submit(kube)
    waits: list[float] = []

    async def sleep(delay: float) -> None:
        waits.append(delay)
        sim_cluster.admin.set_api_faults(throttle_rate=0)  # the server has recovered

    counters = Counters()
    limiter = RateLimiter(TokenBucket(qps=1000, burst=1000), 8, counters=counters)
    api = Api(kube, limiter, counters, delays=FAST_RETRIES, sleep=sleep)
    sim_cluster.admin.set_api_faults(throttle_rate=1.0)
    found = await api.get(job_path(job))

    assert found is not None and found["metadata"]["uid"] == job["metadata"]["uid"]
    # 429 TooManyRequests with Retry-After: 1: a second, not the backoff's millisecond
    assert waits == [1.0]
    assert counters.retried == 1
    assert api.calls == {Call("get", "jobs", Purpose.READ): 2}
