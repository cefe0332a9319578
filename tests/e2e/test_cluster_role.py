"""deploy/'s ClusterRole grants exactly what the controller asks the API server for.

The simulated API server reports each request in RBAC's terms (verb, API group,
resource; `SimulatedCluster.on_request`). One controller runs a scenario that takes
every path to the API the actuator, the watchers and the leader election have: plugins
(svc, ssh, env) and their objects made again after a restart, a generated and an
existing claim, a PriorityClass, a scale-up (the PodGroup and the hosts ConfigMap
updated), Commands (one given twice: its Event counted), a finished job's PodGroup and a
`ttlSecondsAfterFinished` delete.
What the controller asked for must be granted (a real cluster answers 403 otherwise),
and every grant must have been used (a grant nobody uses is a needless privilege).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from lavalog.controller.kafka import ensure_topics
from lavalog.controller.kube import CONTROLLER
from lavalog.simulator import registry
from lavalog.simulator.access import Access
from tests.deploy.conftest import Grant, cluster_role_grants
from tests.e2e.conftest import LEASE, NAMESPACE, make_kafka, poll_until, running_system
from tests.e2e.jobs import FOREVER, job, task

pytestmark = pytest.mark.integration

PRIORITY_CLASS = "lavalog-e2e-high"
EXISTING_CLAIM = "existing-claim"
CLAIM_SPEC = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}


def with_priority_class(spec: dict[str, Any], name: str) -> dict[str, Any]:
    spec["template"]["spec"]["priorityClassName"] = name
    return spec


EVERYTHING = job(
    "everything",
    with_priority_class(task("worker", 2, FOREVER), PRIORITY_CLASS),
    minAvailable=2,
    plugins={"svc": [], "ssh": [], "env": []},
    volumes=[
        {"mountPath": "/data", "volumeClaim": CLAIM_SPEC},
        {"mountPath": "/existing", "volumeClaimName": EXISTING_CLAIM},
    ],
)
RENEWAL: Grant = ("coordination.k8s.io", "leases", "patch")
#: a second restart Command's CommandIssued Event is the first's again: client-go's
#: correlator (Volcano's recorder, and lavalog's) patches the count of the one written
COUNTED: Grant = ("", "events", "patch")
EXPIRING = job("expiring", task("worker", 1, "true"), ttlSecondsAfterFinished=0)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def asked(kafka_broker: str) -> AsyncIterator[set[Grant]]:
    """Every (API group, resource, verb) the controller asked for during the scenario."""
    kafka = make_kafka(kafka_broker)
    await ensure_topics(kafka)
    found: set[Grant] = set()

    def heard(access: Access) -> None:
        if access.user_agent.startswith(f"{CONTROLLER}/"):
            found.add((access.group, access.resource, access.verb))

    async with running_system(kafka, replicas=(), nodes=2, time_scale=50) as system:
        system.cluster.on_request(heard)  # before the controller's first list
        await system.start_replica("cluster-role")
        await system.ready()
        log = system.log
        await system.kube.request(
            "POST",
            "/apis/scheduling.k8s.io/v1/priorityclasses",
            body={"metadata": {"name": PRIORITY_CLASS}, "value": 1000},
        )
        await system.kube.request(
            "POST",
            f"/api/v1/namespaces/{NAMESPACE}/persistentvolumeclaims",
            body={"metadata": {"name": EXISTING_CLAIM}, "spec": CLAIM_SPEC},
        )
        await system.submit(EVERYTHING)
        await system.submit(EXPIRING)
        await system.until_phase("everything", ["Running"], 30)
        await log.until(lambda: len(log.live_pods("everything")) == 2, 30, "two workers")

        await system.scale("everything", 3)
        await log.until(lambda: len(log.live_pods("everything")) == 3, 30, "three workers")
        hosts = system.cluster.objects.find(registry.CONFIGMAP, NAMESPACE, "everything-svc")
        assert hosts is not None and hosts["data"]["VC_WORKER_NUM"] == "3"

        for _ in range(2):
            await system.command("everything", "restart")
            await system.until_phase("everything", ["Restarting"], 30)
            await system.until_phase("everything", ["Running"], 30)
        assert COUNTED in found
        await system.command("everything", "abort")
        await system.until_phase("everything", ["Aborted"], 30)
        await log.until(lambda: log.job("expiring") is None, 30, "expiring deleted by its TTL")
        # the leader renews its Lease once per retry period: a quick scenario can end before
        # the first renewal, so it waits for one (the path is the leader election's, taken
        # in every real run)
        await poll_until(lambda: RENEWAL in found, 3 * LEASE, "the leader renewed its Lease")
        yield found


def test_the_controller_asks_only_for_what_the_cluster_role_grants(asked: set[Grant]) -> None:
    assert sorted(asked - cluster_role_grants()) == []


def test_every_grant_of_the_cluster_role_is_used(asked: set[Grant]) -> None:
    assert sorted(cluster_role_grants() - asked) == []
