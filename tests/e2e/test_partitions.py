"""A partitioned task through the whole system: the PodGroup carries the sub-groups and
network topology, pods carry their partition, and RestartPartition restarts only the
crashed pod's partition while the other partition keeps running."""

from __future__ import annotations

import pytest

from lavalog.simulator import registry
from tests.e2e.conftest import NAMESPACE, System, job_phase
from tests.e2e.faults import Crash, inject
from tests.e2e.jobs import job, on, task

pytestmark = pytest.mark.integration

NAME = "parts"


def uids(system: System) -> dict[str, str]:
    return {p["metadata"]["name"]: p["metadata"]["uid"] for p in system.log.pods_of(NAME)}


async def test_restart_partition_restarts_the_crashed_pods_partition(system: System) -> None:
    worker = task(
        "worker",
        4,
        partitionPolicy={"totalPartitions": 2, "partitionSize": 2, "minPartitions": 1},
        policies=[on("PodFailed", "RestartPartition")],
    )
    manifest = job(NAME, worker, networkTopology={"mode": "soft", "highestTierAllowed": 1})
    await system.submit(manifest)
    await system.until_phase(NAME, ["Running"], 30)
    await system.log.until(lambda: len(system.log.live_pods(NAME)) == 4, 30, "four pods run")

    uid = (system.log.job(NAME) or {})["metadata"]["uid"]
    podgroup = system.cluster.objects.find(registry.PODGROUP, NAMESPACE, f"{NAME}-{uid}")
    assert podgroup is not None
    assert podgroup["spec"]["minMember"] == 2  # one partition of two pods
    assert podgroup["spec"]["networkTopology"] == {"mode": "soft", "highestTierAllowed": 1}
    assert podgroup["spec"]["subGroupPolicy"] == [
        {
            "name": "worker",
            "subGroupSize": 2,
            "minSubGroups": 1,
            "labelSelector": {"matchLabels": {"volcano.sh/task-spec": "worker"}},
            "matchLabelKeys": ["volcano.sh/partition-id"],
        }
    ]
    partitions = {
        p["metadata"]["name"]: p["metadata"]["labels"]["volcano.sh/partition-id"]
        for p in system.log.pods_of(NAME)
    }
    assert partitions == {f"{NAME}-worker-{i}": str(i // 2) for i in range(4)}
    before = uids(system)

    await inject(system, manifest, [Crash("worker-3")])
    await system.log.until(
        lambda: (
            int((system.log.job(NAME) or {}).get("status", {}).get("retryCount", 0)) == 1
            and job_phase(system.log.job(NAME)) == "Running"
            and len(system.log.live_pods(NAME)) == 4
        ),
        30,
        "the job running again with four pods",
    )

    after = uids(system)
    kept = [name for name in before if after.get(name) == before[name]]
    assert kept == [f"{NAME}-worker-0", f"{NAME}-worker-1"]
    assert system.log.creations(NAME) == {
        f"{NAME}-worker-0": 1,
        f"{NAME}-worker-1": 1,
        f"{NAME}-worker-2": 2,
        f"{NAME}-worker-3": 2,
    }
