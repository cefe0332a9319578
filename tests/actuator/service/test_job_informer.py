"""The actuator's Jobs from a list and a watch, as Volcano's controller has its cache."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from lavalog.controller.actuator.service.apply import Applier
from lavalog.controller.actuator.service.job_informer import JobInformer
from lavalog.controller.kube import Kube
from lavalog.simulator import registry
from lavalog.simulator.server import SimulatedCluster
from tests.actuator.conftest import FAST_RETRIES
from tests.actuator.support import job_path, submit
from tests.json_logs import json_logs

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


async def test_a_watch_whose_history_expired_lists_again_and_lets_go_of_jobs_gone_meanwhile(
    sim_cluster: SimulatedCluster, kube: Kube, applier: Applier
) -> None:
    """The watch is down while a Job is deleted, and the history it would resume from is
    compacted: the API server answers its resume with an ERROR event (410 Expired). The
    informer lists again: the deleted Job is let go (the list replaces what was held, as
    client-go's reflector replaces its store), and it goes on watching: a Job created
    later is held without a read."""
    kept, gone = await submit(kube, name="kept"), await submit(kube, name="gone")
    informer = asyncio.create_task(JobInformer(applier._api, applier.jobs).run())  # all namespaces
    watches = "/apis/batch.volcano.sh/v1alpha1/jobs"  # not the namespaced paths below
    try:
        await until(lambda: applier.jobs.get("default/gone", gone["metadata"]["uid"]) is not None)
        sim_cluster.faults.hold(watches)  # the informer's next watch (and list) waits
        sim_cluster.admin.drop_watches()
        await kube.request("DELETE", job_path(gone))
        sim_cluster.admin.expire_history()  # the deletion's change included
        listed = sim_cluster.api_calls["list jobs"]
        sim_cluster.faults.release(watches)

        await until(lambda: sim_cluster.api_calls["list jobs"] > listed)
        await until(lambda: applier.jobs.get("default/gone", gone["metadata"]["uid"]) is None)
        assert applier.jobs.get("default/kept", kept["metadata"]["uid"]) is not None
        later = await submit(kube, name="later")
        await until(lambda: applier.jobs.get("default/later", later["metadata"]["uid"]) is not None)
        assert sim_cluster.api_calls["get jobs"] == 0
    finally:
        informer.cancel()


async def test_a_watch_ended_by_an_error_event_is_resumed_where_it_was_after_a_backoff(
    sim_cluster: SimulatedCluster,
    kube: Kube,
    applier: Applier,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The API server ends the watch with an ERROR event of a 500 (etcd's watch failed):
    the informer says so, waits its backoff and watches again from where it was, without
    listing again; a Job created meanwhile is held without a read."""
    first = await submit(kube, name="first")
    informer = JobInformer(applier._api, applier.jobs, "default", delays=FAST_RETRIES)
    running = asyncio.create_task(informer.run())
    try:
        with json_logs(capsys) as lines:
            await until(
                lambda: applier.jobs.get("default/first", first["metadata"]["uid"]) is not None
            )
            # held from the list already: the failure must meet the watch that follows it
            await until(lambda: sim_cluster.store.watching[registry.JOB] > 0)
            sim_cluster.admin.fail_watches()
            meanwhile = await submit(kube, name="meanwhile")
            uid = meanwhile["metadata"]["uid"]
            await until(lambda: applier.jobs.get("default/meanwhile", uid) is not None)
            logged = lines()
        [failed] = [line for line in logged if line["event"] == "jobs watch failed, retrying"]
        assert "500" in failed["error"] and "etcdserver: no leader" in failed["error"]
        assert sim_cluster.api_calls["list jobs"] == 1
        assert sim_cluster.api_calls["watch jobs"] == 2
        assert sim_cluster.api_calls["get jobs"] == 0
    finally:
        running.cancel()
