"""The simulated cluster's own floor for a run's shape: what its Jobs cost the cluster
when a controller that costs nothing makes the least a Volcano controller must make.

For each Job: the Job is POSTed, then its PodGroup, and its pods once vc-scheduler has
admitted the gang (past Pending), as lavalog and Volcano make them: the manifests come
from the actuator's own builders. No status write, no Event, no log. The time until
every pod exists is the least any controller's run of that shape can take on this
cluster and these cores; a benchmark prints it beside the controller's figure, so that a
reader sees how much of the time is the controller's and how much the cluster's.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import msgspec

from lavalog.controller.actuator.core.names import pod_name
from lavalog.controller.actuator.core.podgroup import build_podgroup
from lavalog.controller.actuator.core.pods import build_pods
from lavalog.controller.kube import Kube
from lavalog.events.decisions import PodGroupCreate, PodRef, PodsCreate

Manifest = dict[str, Any]


class _Meta(msgspec.Struct):
    name: str


class _Phase(msgspec.Struct):
    phase: str = ""


class _Group(msgspec.Struct):
    metadata: _Meta
    status: _Phase = msgspec.field(default_factory=_Phase)


class _GroupEvent(msgspec.Struct):
    type: str
    object: _Group


_decode_group_event = msgspec.json.Decoder(_GroupEvent).decode


def _envelope(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """A decision's envelope about the Job of `metadata`: no decider made it."""
    key = f"{metadata['namespace']}/{metadata['name']}"
    return {"id": "floor", "key": key, "job_uid": metadata["uid"], "time": 0.0, "cause": "floor"}


def podgroup_of(job: Mapping[str, Any]) -> tuple[str, PodGroupCreate]:
    """The PodGroup the controller makes for `job` (as created: it has its uid), by name."""
    metadata, spec = job["metadata"], job["spec"]
    name = f"{metadata['name']}-{metadata['uid']}"
    decision = PodGroupCreate(
        **_envelope(metadata),
        podgroup=name,
        min_member=spec.get("minAvailable", 0),
        queue=spec.get("queue", "default"),
    )
    return name, decision


def pods_of(job: Mapping[str, Any], podgroup: str) -> list[Manifest]:
    """Every pod of `job`'s tasks, as its first run makes them."""
    metadata = job["metadata"]
    refs = tuple(
        PodRef(name=pod_name(metadata["name"], task["name"], index), task=task["name"], index=index)
        for task in job["spec"]["tasks"]
        for index in range(task.get("replicas", 1))
    )
    decision = PodsCreate(
        **_envelope(metadata),
        job_version=0,
        podgroup=podgroup,
        pods=refs,
    )
    return build_pods(job, decision)


async def make_gangs(
    kube: Kube,
    namespace: str,
    jobs: Sequence[Manifest],
    concurrency: int,
    on_start: Callable[[], None] = lambda: None,
) -> float:
    """POST `jobs` into `namespace` (a new one), each one's PodGroup, and its pods once the
    gang is admitted, with `concurrency` requests in flight; seconds until every pod
    exists, from `on_start` (called once the namespace and the watch are ready)."""
    await kube.request("POST", "/api/v1/namespaces", body={"metadata": {"name": namespace}})
    jobs_path = f"/apis/batch.volcano.sh/v1alpha1/namespaces/{namespace}/jobs"
    groups_path = f"/apis/scheduling.volcano.sh/v1beta1/namespaces/{namespace}/podgroups"
    pods_path = f"/api/v1/namespaces/{namespace}/pods"
    slots = asyncio.Semaphore(concurrency)
    created: dict[str, Manifest] = {}  # by PodGroup name: its Job as created
    admitted: asyncio.Queue[str] = asyncio.Queue()

    async def post(path: str, body: Manifest) -> bytes:
        async with slots:
            answer: bytes = await kube.request("POST", path, body=body)
            return answer

    async def submit(job: Manifest) -> None:
        made = msgspec.json.decode(await post(jobs_path, job))
        name, decision = podgroup_of(made)
        created[name] = made
        await post(groups_path, build_podgroup(made, decision))

    async def make_pods(podgroup: str) -> None:
        pods = pods_of(created[podgroup], podgroup)
        await asyncio.gather(*(post(pods_path, pod) for pod in pods))

    watch = asyncio.create_task(_admissions(kube, groups_path, admitted.put_nowait))
    await asyncio.sleep(0.5)  # the watch is open
    on_start()
    started = time.perf_counter()
    try:
        submitting = asyncio.gather(*(submit(job) for job in jobs))
        making: list[asyncio.Task[None]] = []
        while len(making) < len(jobs):
            name = await _next_or_failure(admitted, submitting, watch)
            making.append(asyncio.create_task(make_pods(name)))
        await asyncio.gather(submitting, *making)
        return time.perf_counter() - started
    finally:
        watch.cancel()
        await asyncio.gather(watch, return_exceptions=True)


async def _next_or_failure(admitted: asyncio.Queue[str], *running: asyncio.Future[Any]) -> str:
    """The next gang admitted; a failure of the submissions or of the watch is raised."""
    taking = asyncio.ensure_future(admitted.get())
    while not taking.done():
        going = [future for future in running if not future.done()]
        await asyncio.wait([taking, *going], return_when=asyncio.FIRST_COMPLETED)
        for future in running:
            if future.done() and future.exception() is not None:
                taking.cancel()
                raise RuntimeError("the cluster floor failed") from future.exception()
    return taking.result()


async def _admissions(kube: Kube, path: str, on_admitted: Callable[[str], None]) -> None:
    """Each PodGroup of `path` once, when vc-scheduler moves it past Pending."""
    listed = msgspec.json.decode(await kube.request("GET", path, query={"limit": 1}))
    query = {"watch": 1, "resourceVersion": listed["metadata"]["resourceVersion"]}
    seen: set[str] = set()
    async with kube.stream(path, query, request_timeout=7200) as lines:
        async for line in lines:
            group = _decode_group_event(line).object
            if group.status.phase not in ("", "Pending") and group.metadata.name not in seen:
                seen.add(group.metadata.name)
                on_admitted(group.metadata.name)
    raise RuntimeError("the PodGroups' watch ended")
