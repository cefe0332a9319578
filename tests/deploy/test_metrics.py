"""Every metric the Grafana dashboard and the PrometheusRules query is one a running
controller and the projections export on `/metrics`."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import yaml
from aiohttp.test_utils import TestClient, TestServer

from lavalog.controller.health import health_app
from lavalog.controller.kafka import KafkaSettings
from lavalog.projections.service.app import create_app
from lavalog.projections.service.live import LiveHub
from lavalog.projections.service.sources.file import read_file
from lavalog.projections.service.store.queries import Queries
from lavalog.projections.service.store.sqlite import SqliteLocation
from lavalog.projections.service.store.writer import Store, load
from tests.deploy.conftest import DEPLOY
from tests.e2e.conftest import e2e_kafka as e2e_kafka  # the fixture
from tests.e2e.conftest import poll_until, running_system
from tests.projections.helpers import write_events
from tests.projections.service.test_api import Status, many_jobs

METRIC = re.compile(r"\blavalog_[a-z_]+")


def expressions() -> Iterator[str]:
    dashboard = json.loads((DEPLOY / "base" / "grafana-dashboard.json").read_text())
    for panel in dashboard["panels"]:
        for target in panel["targets"]:
            yield target["expr"]
    for doc in yaml.safe_load_all((DEPLOY / "base" / "alerts.yaml").read_text()):
        for group in doc["spec"]["groups"]:
            for rule in group["rules"]:
                yield rule["expr"]


def exported(text: str) -> set[str]:
    """The series' names, and each declared family's (a counter with no sample yet, such
    as the API calls before the first, is declared all the same)."""
    names = set()
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split()
            names |= {name, f"{name}_total"} if kind == "counter" else {name}
        elif line and not line.startswith("#"):
            names.add(re.split(r"[{ ]", line, maxsplit=1)[0])
    return names


def documented() -> set[str]:
    """Every lavalog metric docs/metrics.md names in full."""
    text = (DEPLOY.parent / "docs" / "metrics.md").read_text()
    return {name for name in METRIC.findall(text) if not name.endswith("_")}


async def scrape(app: Any) -> str:
    async with TestClient(TestServer(app)) as http:
        response = await http.get("/metrics")
        assert response.status == 200
        return await response.text()


async def test_every_queried_and_documented_metric_is_exported(e2e_kafka: KafkaSettings, tmp_path):
    queried = {name for expr in expressions() for name in METRIC.findall(expr)}
    assert {
        "lavalog_decider_lag",
        "lavalog_watchers_leader",
        "lavalog_decider_deadletters_total",
    } <= queried

    async with running_system(e2e_kafka) as system:
        (replica,) = system.replicas
        assert replica.health is not None
        decider = replica.component("decider")
        # the decider reports a partition's lag once it has adopted it and fetched from it
        await poll_until(lambda: bool(decider.lag()), within=20, what="the decider's lag")
        controller = await scrape(health_app(replica.health))

    location = SqliteLocation(tmp_path / "projections.sqlite")
    load(Store(location), read_file(write_events(tmp_path / "log.jsonl", many_jobs())))
    queries = Queries(location)
    try:
        status = Status()
        status.lags[("lavalog.observed", 0)] = 0  # what the feed reports once it has read
        projections = await scrape(create_app(queries=queries, hub=LiveHub(), status=status))
    finally:
        queries.close()

    served = exported(controller + projections)
    assert queried - served == set()
    assert documented() - served == set(), "docs/metrics.md names a metric nobody serves"
