"""What the controller logs about each job, in a real run: the decider's decisions, the
actuator's writes, a rejection, each a JSON line at info naming the job."""

from __future__ import annotations

import pytest

from lavalog.controller.kafka import KafkaSettings
from tests.e2e.conftest import running_system
from tests.e2e.jobs import job, task
from tests.json_logs import json_logs

pytestmark = pytest.mark.integration


async def test_each_jobs_decisions_and_writes_are_logged_with_its_key(
    e2e_kafka: KafkaSettings, capsys: pytest.CaptureFixture[str]
) -> None:
    with json_logs(capsys) as lines:
        async with running_system(e2e_kafka) as system:
            await system.submit(job("logged", task("main", 1, "true")))
            await system.submit(job("rejected", task("twin"), task("twin")))
            await system.until_phase("logged", ["Completed"], within=60)
            await system.until_phase("rejected", ["Failed"], within=60)
        logged = lines()

    about = {
        key: [line for line in logged if line.get("job") == key]
        for key in ("default/logged", "default/rejected")
    }
    decided = {
        key: [line["kind"] for line in those if line["event"] == "decided"]
        for key, those in about.items()
    }
    for kind in ("PodGroupCreate", "PodsCreate", "PhaseChanged", "StatusWrite"):
        assert kind in decided["default/logged"], decided
    assert "JobRejected" in decided["default/rejected"]
    done = {line["event"] for line in about["default/logged"] if line["event"] != "decided"}
    assert {"podgroup created", "pods created", "status written"} <= done
    [rejection] = [
        line
        for line in about["default/rejected"]
        if line["kind"] == "JobRejected" and line["event"] == "decided"
    ]
    assert rejection["level"] == "info"
    assert any("twin" in error for error in rejection["errors"]), rejection
    [completed] = [
        line
        for line in about["default/logged"]
        if line["event"] == "decided"
        and line["kind"] == "PhaseChanged"
        and line["phase"] == "Completed"
    ]
    assert completed["previous"] in ("Running", "Completing")
    # every line about a decision says which job it is about
    assert all("job" in line for line in logged if "decision" in line)
