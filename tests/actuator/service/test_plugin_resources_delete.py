"""PluginResourcesDelete against the simulated API: every object the job's plugins wrote
goes (idempotently), and a decision about a dead incarnation of the job touches nothing of
the job now living under its name."""

from __future__ import annotations

from typing import Any

import pytest

from lavalog.controller.actuator.core import paths
from lavalog.controller.actuator.service.apply import Applier
from lavalog.controller.actuator.service.counters import Counters
from lavalog.controller.kube import Kube, KubeError
from lavalog.events.decisions import PluginResourcesDelete, PluginResourcesEnsure
from tests.actuator.support import NAMESPACE, decision, job_path, submit

pytestmark = pytest.mark.integration

PLUGINS = {"mpi": ["--master=mpimaster", "--worker=mpiworker"]}
REPLICAS = {"mpimaster": 1, "mpiworker": 2}
OBJECTS = [
    paths.named("v1", "ConfigMap", NAMESPACE, "lm-mpi-job-svc"),
    paths.named("v1", "Service", NAMESPACE, "lm-mpi-job"),
    paths.named("networking.k8s.io/v1", "NetworkPolicy", NAMESPACE, "lm-mpi-job"),
    paths.named("v1", "Secret", NAMESPACE, "lm-mpi-job-ssh"),
]


async def existing(kube: Kube) -> list[str]:
    found = []
    for path in OBJECTS:
        try:
            await kube.request("GET", path)
        except KubeError as exc:
            if exc.status != 404:
                raise
        else:
            found.append(path)
    return found


async def ensured(kube: Kube, applier: Applier) -> dict[str, Any]:
    job = await submit(kube, "mpi", plugins=PLUGINS)
    await applier.apply(
        decision(PluginResourcesEnsure, job, plugins=PLUGINS, task_replicas=REPLICAS)
    )
    assert await existing(kube) == OBJECTS
    return job


async def test_delete_removes_every_plugin_object_once(
    kube: Kube, applier: Applier, counters: Counters
) -> None:
    job = await ensured(kube, applier)
    delete = decision(PluginResourcesDelete, job, plugins=PLUGINS, reason="RestartJob")
    await applier.apply(delete)
    await applier.apply(delete)  # carried out again after a crash: nothing left to do
    assert await existing(kube) == []
    assert (counters.applied, counters.failed) == (3, 0)


async def test_delete_for_a_dead_incarnation_is_skipped(
    kube: Kube, applier: Applier, counters: Counters
) -> None:
    old = await submit(kube, "mpi", plugins=PLUGINS)
    await kube.request("DELETE", job_path(old))
    await ensured(kube, applier)  # the job recreated under the same name, objects written
    await applier.apply(decision(PluginResourcesDelete, old, plugins=PLUGINS, reason="AbortJob"))
    assert await existing(kube) == OBJECTS
    assert counters.skipped == 1
