"""An `Applier` with fast retries on the simulated cluster (`kube`, from tests/cluster.py)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from lavalog.controller.actuator.core.plugins import KeyPair
from lavalog.controller.actuator.service.apply import Applier
from lavalog.controller.actuator.service.client import Api
from lavalog.controller.actuator.service.counters import Counters
from lavalog.controller.actuator.service.ratelimit import RateLimiter, TokenBucket
from lavalog.controller.kube import Kube
from lavalog.controller.retry import RetryDelays
from lavalog.events.observations import CreateFailed

FAST_RETRIES = RetryDelays(initial=0.001, maximum=0.01)


def fake_keys() -> KeyPair:
    return KeyPair("-----BEGIN RSA PRIVATE KEY-----\nfake\n", "ssh-rsa AAAAfake\n")


@pytest.fixture
def counters() -> Counters:
    return Counters()


@pytest.fixture
def refusals() -> list[CreateFailed]:
    """The refused creates the applier reports (the service publishes them)."""
    return []


@pytest_asyncio.fixture
async def applier(
    kube: Kube, counters: Counters, refusals: list[CreateFailed]
) -> AsyncIterator[Applier]:
    """An Applier whose Events are written (off the lanes, as in the service)."""
    limiter = RateLimiter(TokenBucket(qps=10_000, burst=10_000), concurrency=32)
    api = Api(kube, limiter, counters, delays=FAST_RETRIES)

    async def refused(fact: CreateFailed) -> None:
        refusals.append(fact)

    applier = Applier(api, counters, keygen=fake_keys, on_refused=refused)
    writer = asyncio.create_task(applier.events.run())
    yield applier
    writer.cancel()
    await asyncio.gather(writer, return_exceptions=True)
