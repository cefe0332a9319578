"""A decision fetched while the actuator commits is carried out without waiting for the commit.

The commit (the progress record, then the offsets: two broker round trips) used to be
made between polls, so a pod replacement decided meanwhile waited for both before it was
even received: a share of `bench/reaction.py`'s tail. Commits stay one at a time, in order.
"""

from __future__ import annotations

import pytest

from lavalog.controller.actuator.service import runner
from lavalog.controller.kafka import KafkaSettings, create_consumer
from lavalog.controller.kube import Kube
from lavalog.events.decisions import StatusWrite
from tests.actuator.service.test_service import (
    committed,
    produce,
    running,
    service,
    until,
)
from tests.actuator.support import decision, job_path, read, status, submit
from tests.held_commits import HeldCommits

pytestmark = [pytest.mark.integration, pytest.mark.timeout(90)]


async def test_a_decision_fetched_during_a_commit_is_carried_out_before_it_ends(
    kube: Kube, kafka_settings: KafkaSettings, monkeypatch: pytest.MonkeyPatch
) -> None:
    held = HeldCommits()
    monkeypatch.setattr(runner, "create_consumer", held.creating(create_consumer))
    job = await submit(kube, name="tf-aside")
    group = "actuator-aside"

    async with running(service(kube, kafka_settings, group)) as actuator:
        await until(lambda: actuator.ready)
        await produce(kafka_settings, [decision(StatusWrite, job, status=status("Pending", 0))])
        await until(lambda: actuator.counters.applied == 1)
        await until(lambda: bool(held.asked))  # its commit is under way, and held
        ends = await produce(
            kafka_settings, [decision(StatusWrite, job, status=status("Running", 1))]
        )
        await until(lambda: actuator.counters.applied == 2, within=10)
        assert len(held.asked) == 1  # no second commit while the first is under way
        held.release.set()
    assert (await read(kube, job_path(job)))["status"]["running"] == 1
    assert await committed(kafka_settings, group) == ends
