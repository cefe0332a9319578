"""Helpers for the actuator tests: Jobs in the simulated cluster, decisions about them,
and reading back what the actuator wrote."""

from __future__ import annotations

import itertools
from typing import Any, TypeVar

import msgspec

from lavalog.controller.actuator.core import paths
from lavalog.controller.kube import Kube
from lavalog.events.decisions import Decision, PodRef, PodsCreate
from lavalog.events.volcano.api import PODGROUP_API_VERSION, JobState, JobStatus, TaskState
from tests.data import load_job

NAMESPACE = "default"
PODGROUPS = paths.collection(PODGROUP_API_VERSION, "PodGroup", NAMESPACE)
EVENTS = paths.collection("v1", "Event", NAMESPACE)
_ids = itertools.count(1)
D = TypeVar("D", bound=Decision)


async def submit(
    kube: Kube, sample: str = "tensorflow-dist", *, name: str = "", **spec: Any
) -> dict[str, Any]:
    """Create `tests/data/<sample>.yaml` (renamed, spec fields overridden); the stored Job."""
    job = load_job(sample)
    del job["metadata"]["namespace"]
    job["metadata"]["name"] = name or job["metadata"]["name"]
    job["spec"].update(spec)
    return await create(kube, paths.collection("batch.volcano.sh/v1alpha1", "Job", NAMESPACE), job)


async def create(kube: Kube, collection: str, body: dict[str, Any]) -> dict[str, Any]:
    created: dict[str, Any] = msgspec.json.decode(await kube.request("POST", collection, body=body))
    return created


async def read(kube: Kube, path: str) -> dict[str, Any]:
    found: dict[str, Any] = msgspec.json.decode(await kube.request("GET", path))
    return found


async def items(kube: Kube, collection: str, **query: str) -> list[dict[str, Any]]:
    listed = msgspec.json.decode(await kube.request("GET", collection, query=query))
    return list(listed["items"])


def decision(kind: type[D], job: dict[str, Any], **fields: Any) -> D:
    """A decision of type `kind` about `job`, with a fresh id."""
    meta = job["metadata"]
    n = next(_ids)
    envelope = {
        "id": f"obs-{n}#0",
        "key": f"{meta['namespace']}/{meta['name']}",
        "job_uid": meta["uid"],
        "time": 1_800_000_000.0 + n,
        "cause": f"obs-{n}",
    }
    return kind(**{**envelope, **fields})


def job_path(job: dict[str, Any]) -> str:
    return paths.job(job["metadata"]["namespace"], job["metadata"]["name"])


def pods_path() -> str:
    return paths.collection("v1", "Pod", NAMESPACE)


def events_of(events: list[dict[str, Any]], job: dict[str, Any]) -> list[dict[str, Any]]:
    return [e for e in events if e["involvedObject"]["uid"] == job["metadata"]["uid"]]


def tf_pods(job: dict[str, Any], version: int = 1) -> PodsCreate:
    name = job["metadata"]["name"]
    refs = [PodRef(name=f"{name}-ps-0", task="ps", index=0)] + [
        PodRef(name=f"{name}-worker-{i}", task="worker", index=i) for i in range(2)
    ]
    return decision(PodsCreate, job, job_version=version, podgroup=f"{name}-pg", pods=tuple(refs))


def initiated_status() -> JobStatus:
    """What Volcano's `initiateJob` writes: Pending, no pod counted yet."""
    return JobStatus(state=status("Pending", 0).state, min_available=3)


def status(phase: str, running: int, retries: int = 0) -> JobStatus:
    """`min_available` 3, `running` of them Running and the rest pending."""
    return JobStatus(
        state=JobState(
            phase=phase, reason="", message="", last_transition_time="2027-01-15T08:00:00Z"
        ),
        min_available=3,
        running=running,
        pending=3 - running,
        retry_count=retries,
        version=retries,
        task_status_count={"worker": TaskState(phase={"Running": running})},
    )
