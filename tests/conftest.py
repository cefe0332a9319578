"""Fixtures shared by every test package.

Kafka:

- `kafka_broker` (session, sync): the bootstrap address of one development broker
  (tansu) for the whole run, one per worker process under `pytest -n`. It is a *sync* fixture on purpose: the broker is a child
  process, not a coroutine, so no event loop owns it and every test can use it from
  its own function-scoped loop (pytest-asyncio's default here) without any
  `loop_scope` markers. Set `LAVALOG_TEST_BOOTSTRAP_SERVERS` to run the suite against
  an existing broker (e.g. Apache Kafka) instead.
- `kafka_settings` (function, async): `KafkaSettings` for that broker with a random
  `topic_prefix`, its topics already created, so tests never see each other's
  messages (name consumer groups with the prefix too), and short consumer-group
  timeouts, so that joins and rebalances take about a second on tansu (docs/kafka.md).

    @pytest.mark.integration
    async def test_something(kafka_settings: KafkaSettings) -> None:
        async with create_producer(kafka_settings) as producer:
            await producer.send_and_wait(topic_name(kafka_settings, OBSERVED), b"...")

Simulated cluster: `sim_cluster`, `kube_api` and `kube` (and the `cluster` marker that
shapes the cluster) come from `tests/cluster.py`, registered here as a plugin.

Keep this file to fixtures that several test packages share; put the rest in the
package's own conftest.py.
"""

from __future__ import annotations

import itertools
import os
import uuid
from collections.abc import Iterator

import pytest

from lavalog.controller.broker import DevelopmentBroker
from lavalog.controller.kafka import KafkaSettings, ensure_topics

pytest_plugins = ["tests.cluster"]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Take the test modules from each package in turn (actuator, admission, ..., then each
    package's second module, ...), a module's tests kept together and in order. In parallel
    (`make test`), workers take modules in this order: so they run different kinds of test
    at once, instead of every worker running an end-to-end system of its own at the same
    moment, which slows each controller down until it falls behind its cluster's scaled
    clock."""
    modules: dict[str, list[pytest.Item]] = {}
    for item in items:
        modules.setdefault(item.nodeid.split("::")[0], []).append(item)
    packages: dict[str, list[list[pytest.Item]]] = {}
    for path, tests in modules.items():
        packages.setdefault(path.split("/")[1], []).append(tests)
    turns = itertools.zip_longest(*packages.values())
    items[:] = [item for turn in turns for tests in turn if tests for item in tests]


def _external_broker() -> str | None:
    return os.environ.get("LAVALOG_TEST_BOOTSTRAP_SERVERS") or None


@pytest.fixture(scope="session")
def kafka_broker() -> Iterator[str]:
    """The bootstrap address of the session's development broker."""
    external = _external_broker()
    if external:
        yield external
        return
    with DevelopmentBroker() as broker:
        yield broker.bootstrap_servers


@pytest.fixture
async def kafka_settings(kafka_broker: str) -> KafkaSettings:
    """Settings for the session broker under a prefix of this test's own; topics created."""
    settings = KafkaSettings(
        bootstrap_servers=kafka_broker,
        topic_prefix=f"test-{uuid.uuid4().hex[:12]}.",
        client_id="lavalog-test",
        # tansu takes about half the session timeout to form a group; Apache Kafka
        # refuses sessions shorter than 6 s.
        session_timeout_ms=6_000 if _external_broker() else 2_000,
        heartbeat_interval_ms=200,
    )
    await ensure_topics(settings)
    return settings
