"""Fixtures for the watcher tests: the observed log, watcher services, Jobs and pods.

Their cluster is `sim_cluster` (tests/cluster.py) of one node: `ONE_NODE`."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

import msgspec
import pytest
import pytest_asyncio
from aiokafka import TopicPartition

from lavalog.controller.actuator.core.pods import build_pod
from lavalog.controller.kafka import KafkaSettings, create_consumer, topic_name
from lavalog.controller.kube import Kube
from lavalog.controller.retry import RetryDelays
from lavalog.controller.watchers.core.lease import LeaseTiming
from lavalog.controller.watchers.service.runner import WatcherService
from lavalog.controller.watchers.service.watch import WatchSettings
from lavalog.events import topics
from lavalog.events.codec import decode_observation
from lavalog.events.decisions import PodRef
from lavalog.events.observations import AnyObservation

#: short watches, quick retries: the tests see resumes and backoff within seconds
FAST = WatchSettings(timeout_seconds=3, retry=RetryDelays(initial=0.02, maximum=0.3, jitter=True))
#: the Lease duration of a replica, as `lavalog run` has it: a leader that cannot renew
#: within two thirds of it steps down, and lists afresh once it leads again, so the pod
#: states in between are never published. With 3 s a loaded machine (load 14-19) made
#: a replica step down mid-test; tests of leadership itself pass their own.
LEASE = LeaseTiming().duration
JOBS = "/apis/batch.volcano.sh/v1alpha1/namespaces/default/jobs"
PODS = "/api/v1/namespaces/default/pods"
#: the watcher tests' cluster: one node (`pytestmark = ONE_NODE` in their modules)
ONE_NODE = pytest.mark.cluster(nodes=1, time_scale=50, bookmark_interval=0.2)


class ObservedLog:
    """Everything on the test's `lavalog.observed`, read from the beginning."""

    def __init__(self, settings: KafkaSettings) -> None:
        self._settings = settings
        self._consumer = create_consumer(settings, group_id=None)
        self.seen: list[AnyObservation] = []

    async def __aenter__(self) -> ObservedLog:
        await self._consumer.start()
        topic = topic_name(self._settings, topics.OBSERVED)
        partitions = [TopicPartition(topic, p) for p in range(self._settings.observed_partitions)]
        self._consumer.assign(partitions)
        await self._consumer.seek_to_beginning(*partitions)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._consumer.stop()

    async def _poll(self) -> int:
        records = await self._consumer.getmany(timeout_ms=100)
        fresh = [decode_observation(r.value) for rs in records.values() for r in rs]
        self.seen.extend(fresh)
        return len(fresh)

    async def wait_for(
        self, done: Callable[[list[AnyObservation]], bool], within: float = 15.0
    ) -> list[AnyObservation]:
        async with asyncio.timeout(within):
            while not done(self.seen):
                await self._poll()
        return self.seen

    async def settle(self, quiet: float = 0.6) -> list[AnyObservation]:
        """Everything published until nothing new came for `quiet` seconds."""
        loop = asyncio.get_running_loop()
        last = loop.time()
        while loop.time() - last < quiet:
            if await self._poll():
                last = loop.time()
        return self.seen


@pytest_asyncio.fixture
async def observed(kafka_settings: KafkaSettings) -> AsyncIterator[ObservedLog]:
    async with ObservedLog(kafka_settings) as log:
        yield log


def service(
    kube: Kube, kafka: KafkaSettings, identity: str = "lavalog-0", lease_duration: float = LEASE
) -> WatcherService:
    return WatcherService(
        kube=kube,
        kafka=kafka,
        identity=identity,
        lease=LeaseTiming.scaled(lease_duration),
        watch_settings=FAST,
    )


@contextlib.asynccontextmanager
async def running(*services: WatcherService) -> AsyncIterator[list[asyncio.Task[None]]]:
    tasks = [asyncio.create_task(s.run()) for s in services]
    try:
        yield tasks
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def until(check: Callable[[], bool], within: float = 10.0) -> None:
    async with asyncio.timeout(within):
        while True:
            if check():
                return
            await asyncio.sleep(0.02)


def job_manifest(name: str, commands: Sequence[str] = ("sleep 25; exit 3",)) -> dict[str, Any]:
    """A Volcano Job whose task `worker` runs one command per replica (on the default
    scheduler, so that pods run without a PodGroup)."""
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "minAvailable": 1,
            "schedulerName": "default-scheduler",
            "tasks": [
                {
                    "name": "worker",
                    "replicas": len(commands),
                    "template": {
                        "spec": {
                            "restartPolicy": "Never",
                            "schedulerName": "default-scheduler",
                            "containers": [
                                {
                                    "name": "main",
                                    "image": "busybox",
                                    "command": ["sh", "-c", commands[0]],
                                }
                            ],
                        }
                    },
                }
            ],
        },
    }


async def create_job(
    kube: Kube, name: str, commands: Sequence[str] = ("sleep 25; exit 3",)
) -> dict[str, Any]:
    job: dict[str, Any] = decode(
        await kube.request("POST", JOBS, body=job_manifest(name, commands))
    )
    return job


async def create_pod(kube: Kube, job: dict[str, Any], index: int, command: str) -> dict[str, Any]:
    """Pod `index` of the job's task `worker`, exactly as the actuator builds it."""
    name = job["metadata"]["name"]
    manifest = build_pod(
        job,
        PodRef(name=f"{name}-worker-{index}", task="worker", index=index),
        job_version=0,
        podgroup=f"{name}-{job['metadata']['uid']}",
    )
    manifest["spec"]["containers"][0]["command"] = ["sh", "-c", command]
    pod: dict[str, Any] = decode(await kube.request("POST", PODS, body=manifest))
    return pod


def decode(data: bytes) -> Any:
    return msgspec.json.decode(data)
