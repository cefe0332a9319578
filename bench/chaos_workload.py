"""The chaos run's workload: seeded Volcano Jobs of every kind, submitted and driven as a
user would (commands once a job runs, scaling), and the run's view of the cluster.

    workload(seed=1, count=300)                          # every kind, the default mix
    workload(seed=1, count=1000, kinds=("plain", "abort"))  # a churn run's mix
"""

from __future__ import annotations

import asyncio
import random
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import msgspec

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lavalog.cli.commands.job import ACTIONS, command_object
from lavalog.controller.actuator.core import paths
from lavalog.controller.actuator.core.calls import classify
from lavalog.controller.kube import Kube, KubeError
from tests.e2e.jobs import FOREVER, job, on, task

NAMESPACE = "default"
JOBS = paths.collection("batch.volcano.sh/v1alpha1", "Job", NAMESPACE)
PODS = f"/api/v1/namespaces/{NAMESPACE}/pods"
PODGROUPS = paths.collection("scheduling.volcano.sh/v1beta1", "PodGroup", NAMESPACE)
COMMANDS = f"/apis/bus.volcano.sh/v1alpha1/namespaces/{NAMESPACE}/commands"
FINISHED = frozenset({"Completed", "Failed", "Terminated", "Aborted"})
LIVE = ("Pending", "Running")
VERSION = "volcano.sh/job-version"
JOB_NAME = "volcano.sh/job-name"

Obj = dict[str, Any]

#: the run's own API requests ("verb resource" -> count), taken off the API server's count
OWN_CALLS: Counter[str] = Counter()


@dataclass(frozen=True)
class Step:
    """Something done to a job once it is in `phase` (and, if set, runs `running` pods):
    a `lavalog job VERB` command, or a scale of its first task to `replicas`."""

    phase: str
    verb: str = ""
    replicas: int | None = None
    running: int | None = None


@dataclass(frozen=True)
class Planned:
    name: str
    kind: str
    manifest: Obj
    steps: tuple[Step, ...] = ()


def _sleep(rng: random.Random) -> int:
    return rng.randint(10, 60)  # simulated seconds: 0.2-1.2 s at the time scale used


def plan(kind: str, name: str, rng: random.Random) -> Planned:
    """One job of `kind`, its commands and exit codes drawn from `rng`."""
    if kind == "plain":
        return Planned(
            name, kind, job(name, task("worker", rng.randint(1, 3), f"sleep {_sleep(rng)}"))
        )
    if kind == "restart-job":
        code = rng.choice((2, 3, 7))
        manifest = job(
            name,
            task("ps", 1),
            task("worker", rng.randint(1, 2), f"sleep {_sleep(rng)}; exit {code}"),
            maxRetry=rng.randint(1, 3),
            policies=[{"exitCode": code, "action": "RestartJob"}],
        )
        return Planned(name, kind, manifest)
    if kind == "restart-task":
        worker = task(
            "worker", 1, f"sleep {_sleep(rng)}; exit 1", policies=[on("PodFailed", "RestartTask")]
        )
        manifest = job(name, task("ps", 1), worker, maxRetry=rng.randint(1, 3))
        return Planned(name, kind, manifest)
    if kind == "abort":
        worker = task("worker", 1, f"sleep {_sleep(rng)}; exit 1")
        return Planned(
            name, kind, job(name, task("ps", 1), worker, policies=[on("PodFailed", "AbortJob")])
        )
    if kind == "terminate":
        steps: tuple[Step, ...] = (Step("Running", verb="terminate"),)
        return Planned(name, kind, job(name, task("worker", rng.randint(1, 3))), steps)
    if kind == "task-completed":
        main = task(
            "main",
            rng.randint(1, 2),
            f"sleep {_sleep(rng)}",
            policies=[on("TaskCompleted", "CompleteJob")],
        )
        return Planned(name, kind, job(name, main, task("side", 1)))
    if kind == "depends-on":
        # the gang is the first task: `then` is created only once `first` runs
        replicas = rng.randint(1, 2)
        first = task("first", replicas, f"sleep {_sleep(rng)}")
        then = task("then", 1, f"sleep {_sleep(rng)}", dependsOn={"name": ["first"]})
        return Planned(name, kind, job(name, first, then, minAvailable=replicas))
    if kind == "timeout":
        # the failed pod stays failed: the delayed AbortJob comes due, the ps keeps it Running
        policy = {"event": "PodFailed", "action": "AbortJob", "timeout": "10s"}
        worker = task("worker", 1, f"sleep {_sleep(rng)}; exit 2")
        return Planned(name, kind, job(name, task("ps", 1), worker, policies=[policy]))
    if kind == "suspend-resume":
        steps = (
            Step("Running", verb="suspend"),
            Step("Aborted", verb="resume"),
            Step("Running", verb="complete"),
        )
        return Planned(name, kind, job(name, task("worker", rng.randint(1, 2))), steps)
    if kind == "scale":
        steps = (
            Step("Running", replicas=3, running=2),
            Step("Running", replicas=1, running=3),
            Step("Running", verb="complete", running=1),
        )
        manifest = job(name, task("worker", 2, FOREVER), minAvailable=1)
        return Planned(name, kind, manifest, steps)
    raise ValueError(kind)


KINDS = (
    "plain", "restart-job", "restart-task", "abort", "terminate", "task-completed",
    "depends-on", "timeout", "suspend-resume", "scale",
)  # fmt: skip


def workload(seed: int, count: int, kinds: Sequence[str] = KINDS) -> list[Planned]:
    """`count` jobs: each of `kinds` at least once, the rest drawn at random from them; the
    same seed, the same jobs."""
    rng = random.Random(seed)
    kinds = [*kinds, *rng.choices(kinds, k=max(0, count - len(kinds)))][:count]
    rng.shuffle(kinds)
    return [plan(kind, f"{kind}-{i:03d}", rng) for i, kind in enumerate(kinds)]


async def call(kube: Kube, method: str, path: str, **options: Any) -> bytes:
    """The run's own API calls ride out the 500s and 429s it injects (and are counted)."""
    what = classify(method, path)
    while True:
        try:
            OWN_CALLS[f"{what.verb} {what.resource}"] += 1
            return await kube.request(method, path, **options)
        except KubeError as exc:
            if exc.status not in (429, 500, 503):
                raise
        except (aiohttp.ClientError, TimeoutError):
            pass
        await asyncio.sleep(0.1)


@dataclass
class View:
    """The cluster as the last listing saw it, refreshed while the run goes on."""

    kube: Kube
    jobs: dict[str, Obj] = field(default_factory=dict)
    pods: list[Obj] = field(default_factory=list)
    refreshed: asyncio.Event = field(default_factory=asyncio.Event)

    async def refresh(self) -> None:
        jobs = msgspec.json.decode(await call(self.kube, "GET", JOBS))["items"]
        pods = msgspec.json.decode(await call(self.kube, "GET", PODS))["items"]
        self.jobs = {j["metadata"]["name"]: j for j in jobs}
        self.pods = pods
        self.refreshed.set()
        self.refreshed.clear()

    async def follow(self, every: float = 0.25) -> None:
        while True:
            await self.refresh()
            await asyncio.sleep(every)

    async def until(self, condition: Callable[[], bool]) -> None:
        while not condition():
            await self.refreshed.wait()

    def phase(self, name: str) -> str:
        return phase_of(self.jobs.get(name))

    def pods_left(self) -> list[str]:
        """Pods pending or running for a finished job, as last listed."""
        return [
            f"pod {p['metadata']['name']}"
            for p in self.pods
            if pod_phase(p) in LIVE and self.phase(job_of(p)) in FINISHED
        ]

    async def left_for_finished_jobs(self) -> list[str]:
        """`pods_left`, and the PodGroups of finished jobs, listed now (a PodGroup left holds
        a share of its queue: the gang scheduler admits others less). Listed only here,
        not at every refresh of the run."""
        groups = msgspec.json.decode(await call(self.kube, "GET", PODGROUPS))["items"]
        podgroups = [
            f"PodGroup {g['metadata']['name']}"
            for g in groups
            if self.phase(owner_of(g)) in FINISHED
        ]
        return sorted(self.pods_left() + podgroups)


def phase_of(job: Obj | None) -> str:
    return str(((job or {}).get("status") or {}).get("state", {}).get("phase", ""))


def owner_of(obj: Obj) -> str:
    """The name of the Job that owns `obj` ("" for none)."""
    owners = obj["metadata"].get("ownerReferences") or []
    return next((str(o["name"]) for o in owners if o.get("kind") == "Job"), "")


def pod_phase(pod: Obj) -> str:
    return str((pod.get("status") or {}).get("phase", "Pending"))


def job_of(pod: Obj) -> str:
    return str((pod["metadata"].get("labels") or {}).get(JOB_NAME, ""))


def version_of(pod: Obj) -> int:
    return int((pod["metadata"].get("annotations") or {}).get(VERSION, "-1"))


async def submit(kube: Kube, planned: Planned) -> None:
    try:
        await call(kube, "POST", JOBS, body=planned.manifest)
    except KubeError as exc:
        if exc.status != 409:  # created by the attempt that was answered 500
            raise


async def drive(kube: Kube, view: View, planned: Planned) -> None:
    """Carry out the job's steps, each once its moment comes."""
    for step in planned.steps:

        def due(step: Step = step) -> bool:
            found = view.jobs.get(planned.name)
            running = int(((found or {}).get("status") or {}).get("running", 0))
            return view.phase(planned.name) == step.phase and (
                step.running is None or running == step.running
            )

        await view.until(due)
        if step.verb:
            uid = view.jobs[planned.name]["metadata"]["uid"]
            body = command_object(NAMESPACE, planned.name, uid, ACTIONS[step.verb])
            await call(kube, "POST", COMMANDS, body=body)
        elif step.replicas is not None:
            await scale(kube, planned.name, step.replicas)


async def scale(kube: Kube, name: str, replicas: int) -> None:
    """Set the first task's replicas, as `kubectl edit` would (a conflict reads again)."""
    while True:
        found: Obj = msgspec.json.decode(await call(kube, "GET", paths.job(NAMESPACE, name)))
        found["spec"]["tasks"][0]["replicas"] = replicas
        try:
            await call(kube, "PUT", paths.job(NAMESPACE, name), body=found)
            return
        except KubeError as exc:
            if exc.status != 409:
                raise
