"""A running controller's `/metrics` carries Volcano's job-controller metrics beside
lavalog's own, under Volcano's names and labels, counted from the jobs it ran."""

from __future__ import annotations

import pytest
from aiohttp.test_utils import TestClient, TestServer

from lavalog.controller.health import health_app
from tests.e2e.conftest import System
from tests.e2e.jobs import job, task

pytestmark = [pytest.mark.integration]

LATENCY = "volcano_controller_job_to_pod_creation_latency_milliseconds"


async def scrape(system: System) -> list[str]:
    (replica,) = system.replicas
    assert replica.health is not None
    async with TestClient(TestServer(health_app(replica.health))) as http:
        response = await http.get("/metrics")
        assert response.status == 200
        return (await response.text()).splitlines()


async def test_volcano_metrics_are_served_beside_lavalogs(system: System) -> None:
    await system.submit(job("done", task("worker", 2, "sleep 20")))
    await system.submit(job("lost", task("worker", 1, "sleep 20; exit 1")))
    await system.until_phase("done", ["Completed"], within=60)
    await system.until_phase("lost", ["Failed"], within=60)

    lines = await scrape(system)

    assert any(line.startswith("lavalog_decider_decisions_total ") for line in lines)
    assert (
        'volcano_job_completed_phase_count{job_name="default/done",queue_name="default"} 1' in lines
    )
    assert 'volcano_job_failed_phase_count{job_name="default/lost",queue_name="default"} 1' in lines
    assert "# TYPE volcano_job_completed_phase_count counter" in lines
    assert f"# TYPE {LATENCY} histogram" in lines
    assert f"{LATENCY}_count 3" in lines  # one per pod the controller made
