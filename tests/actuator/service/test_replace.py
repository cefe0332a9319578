"""PodsReplace against the simulated cluster: the finished pod goes, one of the same name
comes back from the Job's template, and carrying it out again changes nothing."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from lavalog.controller.actuator.service.apply import Applier
from lavalog.controller.actuator.service.counters import Counters
from lavalog.controller.kube import MERGE_PATCH, Kube
from lavalog.events.decisions import PodRef, PodsReplace, StatusWrite
from tests.actuator.support import create, decision, items, pods_path, read, status, submit
from tests.simulator.kube import eventually

pytestmark = pytest.mark.integration

WORKER = "tensorflow-dist-mnist-worker-0"


async def finished_pod(kube: Kube, *, finalizers: tuple[str, ...] = ()) -> dict[str, Any]:
    """A Failed pod of the Job's worker task, not scheduled (nothing runs it)."""
    pod = {
        "metadata": {"name": WORKER, "finalizers": list(finalizers)},
        "spec": {"schedulerName": "none", "containers": [{"name": "c", "image": "x"}]},
    }
    created = await create(kube, pods_path(), pod)
    failed = {**created, "status": {"phase": "Failed"}}
    await kube.request("PUT", f"{pods_path()}/{WORKER}/status", body=failed)
    return created


def replace_of(job: dict[str, Any], pod: dict[str, Any], *, version: int = 0) -> PodsReplace:
    ref = PodRef(name=WORKER, task="worker", index=0, uid=pod["metadata"]["uid"])
    return decision(
        PodsReplace,
        job,
        reason="RestartPod",
        pods=(ref,),
        job_version=version,
        podgroup="tensorflow-dist-mnist-pg",
    )


async def test_a_finished_pod_comes_back_once_from_the_template(
    kube: Kube, applier: Applier, counters: Counters
) -> None:
    job = await submit(kube)
    old = await finished_pod(kube)
    replace = replace_of(job, old, version=0)

    await applier.apply(replace)
    await applier.apply(replace)  # carried out again (a crash before the commit)

    [new] = await items(kube, pods_path())
    assert new["metadata"]["name"] == WORKER
    assert new["metadata"]["uid"] != old["metadata"]["uid"]
    assert new["metadata"]["annotations"]["volcano.sh/job-version"] == "0"
    assert new["metadata"]["labels"]["volcano.sh/task-spec"] == "worker"
    assert new["metadata"]["ownerReferences"][0]["uid"] == job["metadata"]["uid"]
    assert (counters.applied, counters.failed) == (2, 0)


async def test_the_new_pod_waits_until_the_old_one_is_gone(kube: Kube, applier: Applier) -> None:
    """A finalizer holds the old pod after its deletion: the name is taken until it is
    removed, and the replacement is made then (not skipped as already there)."""
    job = await submit(kube)
    old = await finished_pod(kube, finalizers=("example.com/hold",))
    carried_out = asyncio.create_task(applier.apply(replace_of(job, old)))

    async def deleting() -> bool:
        pod = await read(kube, f"{pods_path()}/{WORKER}")
        return bool(pod["metadata"].get("deletionTimestamp"))

    await eventually(deleting, within=30)
    assert not carried_out.done()
    release: dict[str, Any] = {"metadata": {"finalizers": []}}
    await kube.request("PATCH", f"{pods_path()}/{WORKER}", body=release, content_type=MERGE_PATCH)
    await asyncio.wait_for(carried_out, timeout=30)

    [new] = await items(kube, pods_path())
    assert new["metadata"]["uid"] != old["metadata"]["uid"]
    assert not new["metadata"].get("deletionTimestamp")


async def test_a_job_stopping_its_run_gets_the_delete_and_no_new_pod(
    kube: Kube, applier: Applier
) -> None:
    """The Job is Aborting the version the replacement was made for (its pods being
    killed): the replacement, carried out again after those kills, makes nothing."""
    job = await submit(kube)
    await applier.apply(decision(StatusWrite, job, status=status("Aborting", 0)))
    old = await finished_pod(kube)

    await applier.apply(replace_of(job, old, version=0))

    assert await items(kube, pods_path()) == []


async def test_a_job_past_the_version_gets_the_delete_and_no_new_pod(
    kube: Kube, applier: Applier
) -> None:
    job = await submit(kube)
    await applier.apply(decision(StatusWrite, job, status=status("Restarting", 0, retries=1)))
    old = await finished_pod(kube)

    await applier.apply(replace_of(job, old, version=0))

    assert await items(kube, pods_path()) == []
