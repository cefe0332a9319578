"""A simulated cluster, a `Kube` client for it, and an `Applier` with fast retries."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from controller.actuator.core.plugins import KeyPair
from controller.actuator.service.apply import Applier
from controller.actuator.service.client import Api
from controller.actuator.service.counters import Counters
from controller.actuator.service.ratelimit import RateLimiter, TokenBucket
from controller.actuator.service.retry import Backoff
from controller.kube import Kube, connect
from simulator.server import SimulatedCluster

FAST_RETRIES = Backoff(initial=0.001, cap=0.01)


def fake_keys() -> KeyPair:
    return KeyPair("-----BEGIN RSA PRIVATE KEY-----\nfake\n", "ssh-rsa AAAAfake\n")


@pytest_asyncio.fixture
async def cluster() -> AsyncIterator[SimulatedCluster]:
    async with SimulatedCluster(nodes=2, time_scale=50, bookmark_interval=0.2) as sim:
        yield sim


@pytest_asyncio.fixture
async def kube(cluster: SimulatedCluster) -> AsyncIterator[Kube]:
    async with connect(str(cluster.kubeconfig_path)) as client:
        yield client


@pytest.fixture
def counters() -> Counters:
    return Counters()


@pytest.fixture
def applier(kube: Kube, counters: Counters) -> Applier:
    limiter = RateLimiter(TokenBucket(qps=10_000, burst=10_000), concurrency=32)
    api = Api(kube, limiter, counters, backoff=FAST_RETRIES)
    return Applier(api, counters, keygen=fake_keys)
