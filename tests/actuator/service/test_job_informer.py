"""The actuator's Jobs from a list and a watch, as Volcano's controller has its cache."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from lavalog.controller.actuator.service.apply import Applier
from lavalog.controller.actuator.service.job_informer import JobInformer
from lavalog.controller.kube import Kube
from lavalog.simulator.server import SimulatedCluster
from tests.actuator.support import job_path, submit

pytestmark = pytest.mark.integration


async def until(condition: Callable[[], bool]) -> None:
    async with asyncio.timeout(30):
        while True:
            if condition():
                return
            await asyncio.sleep(0.01)


async def test_jobs_created_and_deleted_after_the_list_are_held_and_let_go(
    sim_cluster: SimulatedCluster, kube: Kube, applier: Applier
) -> None:
    listed = await submit(kube, name="listed")
    informer = asyncio.create_task(JobInformer(applier._api, applier.jobs, "default").run())
    try:
        await until(
            lambda: applier.jobs.get("default/listed", listed["metadata"]["uid"]) is not None
        )
        watched = await submit(kube, name="watched")
        uid = watched["metadata"]["uid"]
        await until(lambda: applier.jobs.get("default/watched", uid) is not None)
        assert sim_cluster.api_calls["get jobs"] == 0

        await kube.request("DELETE", job_path(watched))
        await until(lambda: applier.jobs.get("default/watched", uid) is None)
    finally:
        informer.cancel()
