"""An `Applier` with fast retries on the simulated cluster (`kube`, from simulator.testing)."""

from __future__ import annotations

import pytest

from lavalog.controller.actuator.core.plugins import KeyPair
from lavalog.controller.actuator.service.apply import Applier
from lavalog.controller.actuator.service.client import Api
from lavalog.controller.actuator.service.counters import Counters
from lavalog.controller.actuator.service.ratelimit import RateLimiter, TokenBucket
from lavalog.controller.kube import Kube
from lavalog.controller.retry import RetryDelays

FAST_RETRIES = RetryDelays(initial=0.001, maximum=0.01)


def fake_keys() -> KeyPair:
    return KeyPair("-----BEGIN RSA PRIVATE KEY-----\nfake\n", "ssh-rsa AAAAfake\n")


@pytest.fixture
def counters() -> Counters:
    return Counters()


@pytest.fixture
def applier(kube: Kube, counters: Counters) -> Applier:
    limiter = RateLimiter(TokenBucket(qps=10_000, burst=10_000), concurrency=32)
    api = Api(kube, limiter, counters, delays=FAST_RETRIES)
    return Applier(api, counters, keygen=fake_keys)
