"""Volcano's failure paths through the whole system, on a simulated cluster that produces
them the way a kubelet and vc-scheduler do: a `dependsOn` waiting for ready containers
(readiness probes), a TaskFailed counted over init containers' restarts (a crash-looping
init container keeps its pod Pending), and the PodGroup conditions vc-scheduler writes.
All jobs run at once in one system; each test waits for its own job.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from bench.harness import read_topic
from lavalog.controller.kafka import ensure_topics
from lavalog.events import topics
from lavalog.events.codec import decode_decision, decode_observation
from lavalog.events.decisions import ActionDecided, PodGroupPending
from lavalog.events.observations import PodGroupObserved
from lavalog.simulator import registry
from lavalog.simulator.selectors import Selector
from lavalog.simulator.store import Change
from tests.e2e.conftest import NAMESPACE, System, make_kafka, pod_phase, poll_until, running_system
from tests.e2e.jobs import job, on, task

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="module")]

#: ready 60 simulated seconds after it starts (1.2 s at the time scale used here)
SLOW_TO_BE_READY = {"exec": {"command": ["true"]}, "initialDelaySeconds": 60, "periodSeconds": 5}


def ready_after_a_while(name: str) -> dict[str, Any]:
    ps = task(name, 1)
    ps["template"]["spec"]["containers"][0]["readinessProbe"] = SLOW_TO_BE_READY
    return ps


def crash_looping_init(name: str, **extra: Any) -> dict[str, Any]:
    """A task whose init container fails every time: its pod stays Pending, restarting it."""
    worker = task(name, 1, restart="OnFailure", **extra)
    worker["template"]["spec"]["initContainers"] = [
        {"name": "setup", "image": "busybox", "command": ["sh", "-c", "exit 1"]}
    ]
    return worker


JOBS = [
    job(
        "ready-deps",
        ready_after_a_while("ps"),
        task("worker", 2, dependsOn={"name": ["ps"]}),
        minAvailable=1,  # the gang the scheduler admits before the workers exist
    ),
    job(
        "init-crash",
        task("ps", 1),
        crash_looping_init("worker", maxRetry=2),
        policies=[on("TaskFailed", "AbortJob")],
    ),
]


class PodWrites:
    """What the cluster stored about pods, in order: each pod's creation, the first time it
    ran, the first time it ran with every container ready; and the most restarts its init
    containers reached."""

    def __init__(self, system: System) -> None:
        self.order: list[tuple[str, str]] = []
        self.init_restarts: dict[str, int] = {}
        system.cluster.store.subscribe(self._on_change)

    def _on_change(self, change: Change) -> None:
        if change.resource is not registry.POD or change.type == "DELETED":
            return
        pod = change.entry.obj
        name = pod["metadata"]["name"]
        status = pod.get("status", {})
        if change.type == "ADDED":
            self.order.append((name, "created"))
        if pod_phase(pod) == "Running":
            containers = status.get("containerStatuses") or []
            ready = bool(containers) and all(c.get("ready") for c in containers)
            fact = "ready" if ready else "running"
            if (name, fact) not in self.order:
                self.order.append((name, fact))
        restarts = sum(c.get("restartCount", 0) for c in status.get("initContainerStatuses") or [])
        self.init_restarts[name] = max(restarts, self.init_restarts.get(name, 0))

    def first(self, name: str, fact: str) -> int:
        return self.order.index((name, fact))


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def world(kafka_broker: str) -> AsyncIterator[tuple[System, PodWrites]]:
    kafka = make_kafka(kafka_broker)
    await ensure_topics(kafka)
    async with running_system(kafka, nodes=3, time_scale=50) as system:
        writes = PodWrites(system)
        for manifest in JOBS:
            await system.submit(manifest)
        yield system, writes


async def test_depends_on_waits_until_the_pods_containers_are_ready(
    world: tuple[System, PodWrites],
) -> None:
    """Volcano's isDependsOnPodsReady: a Running pod counts once every container is ready
    (here: its readiness probe passes a minute after it started)."""
    system, writes = world
    workers = {"ready-deps-worker-0", "ready-deps-worker-1"}
    await system.log.until(
        lambda: workers <= set(system.log.creations("ready-deps")), 60, "workers created"
    )

    running = writes.first("ready-deps-ps-0", "running")
    ready = writes.first("ready-deps-ps-0", "ready")
    assert running < ready < min(writes.first(worker, "created") for worker in workers)


async def test_restarts_of_a_crash_looping_init_container_fail_the_task(
    world: tuple[System, PodWrites],
) -> None:
    """Volcano's TaskFailed adds up init containers' restarts too, for Pending pods: the
    worker never runs, and its task's maxRetry (2) of restarts aborts the job."""
    system, writes = world

    aborted = await system.until_phase("init-crash", ["Aborted"], within=60)

    records = await read_topic(system.kafka, topics.DECISIONS, system.kafka.decisions_partitions)
    actions = [
        (d.action, d.trigger, d.pod)
        for d in map(decode_decision, (r.value for r in records))
        if isinstance(d, ActionDecided) and d.key == "default/init-crash"
    ]
    assert actions == [("AbortJob", "TaskFailed", "init-crash-worker-0")]
    assert writes.init_restarts["init-crash-worker-0"] >= 2
    log = system.log
    worker = [
        p for uid, ps in log.phases.items() if log.names[uid] == "init-crash-worker-0" for p in ps
    ]
    assert "Running" not in worker
    assert aborted["status"]["retryCount"] == 0


async def test_a_gang_scheduled_after_waiting_is_no_longer_reported_pending(
    world: tuple[System, PodWrites],
) -> None:
    """vc-scheduler leaves Unschedulable=True in place when it adds Scheduled=True; Volcano's
    recordPodGroupEvent reports the newest True condition only, so a gang that waited is
    reported while it waits and never after it was scheduled. Here `hog` fills 7 of each
    node's 8 CPUs for a while; `waiter` (6 CPUs) is enqueued (the cluster may be
    overcommitted 1.2 times) but fits no node until `hog` has finished."""
    system, _ = world
    await system.submit(job("hog", task("busy", 3, "sleep 100", cpu="7")))
    await system.until_phase("hog", ["Running"], 60)
    await system.submit(job("waiter", task("big", 1, "sleep 100", cpu="6")))

    await system.until_phase("waiter", ["Running"], 60)
    group = next(
        e.obj
        for e in system.cluster.objects.store.scan(registry.PODGROUP, NAMESPACE, Selector())
        if e.obj["metadata"]["name"].startswith("waiter-")
    )
    held = {c["type"]: c["status"] for c in group["status"]["conditions"]}
    assert held == {"Unschedulable": "True", "Scheduled": "True"}  # vc-scheduler's way
    decider = system.replicas[0].component("decider")
    await poll_until(lambda: not any(decider.lag().values()), 30, "every fact decided")

    observations = {
        o.id: o
        for r in await read_topic(system.kafka, topics.OBSERVED, system.kafka.observed_partitions)
        if isinstance(o := decode_observation(r.value), PodGroupObserved)
    }
    records = await read_topic(system.kafka, topics.DECISIONS, system.kafka.decisions_partitions)
    reported = [
        observations[d.cause]
        for d in map(decode_decision, (r.value for r in records))
        if isinstance(d, PodGroupPending) and d.key == "default/waiter"
    ]
    assert reported, "the wait is reported"
    assert all(o.phase != "Running" for o in reported), [o.phase for o in reported]
    assert any(o.phase == "Running" for o in observations.values() if o.key == "default/waiter")
