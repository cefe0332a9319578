"""The whole system for end-to-end tests: development broker, simulated cluster, controller.

- `e2e_kafka`: `KafkaSettings` on the session's broker (the root `kafka_broker`) under a
  prefix of the test's own, with small partition counts and short group timeouts, its
  topics created. `make_kafka(bootstrap)` makes more (a second, independent run).
- `running_system(kafka, ...)`: a `System`, i.e. a simulated cluster, a client on it, a
  `ClusterLog` of every pod change, and one or more controller replicas
  (`run_controller`) in this process. `system` is one with defaults.
- `wait_for_phase(kube, name, phases, within)`: poll a Job through the API until its
  phase is one of `phases`; `poll_until(predicate, within)` for state outside the
  cluster (consumer groups, leadership).

Waiting is event-driven where the cluster is in this process: `ClusterLog.until(...)`
(and `System.until_phase`) re-check a predicate after every write to the simulator's
store, so faults land at exact moments and nothing sleeps a guessed time.
"""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import msgspec
import pytest

from lavalog.cli.commands.job import ACTIONS, _issue
from lavalog.controller.actuator.core import paths
from lavalog.controller.app import ControllerConfig, run_controller
from lavalog.controller.health import Health
from lavalog.controller.kafka import KafkaSettings, ensure_topics
from lavalog.controller.kube import MERGE_PATCH, Kube, KubeError, connect
from lavalog.controller.watchers.core.lease import LeaseTiming
from lavalog.events.observations import MAX_REQUEUE_NUM
from lavalog.simulator import registry
from lavalog.simulator.selectors import Selector, parse_labels
from lavalog.simulator.server import SimulatedCluster
from lavalog.simulator.store import Change

NAMESPACE = "default"
JOBS = paths.collection("batch.volcano.sh/v1alpha1", "Job", NAMESPACE)
PARTITIONS = 3
#: phases a job does not leave on its own
FINISHED = ("Completed", "Failed", "Terminated", "Aborted")
#: the watchers' Lease duration of a replica, as `lavalog run` has it: a leader renews it
#: within two thirds of it or steps down, and the next leader lists afresh (a pod's states
#: in between are not seen), so a shorter one lets a busy machine change what a job does
LEASE = LeaseTiming().duration

Obj = dict[str, Any]


def make_kafka(bootstrap: str) -> KafkaSettings:
    """Settings for one end-to-end run: its own topics, few partitions, quick groups."""
    external = bool(os.environ.get("LAVALOG_TEST_BOOTSTRAP_SERVERS"))
    return KafkaSettings(
        bootstrap_servers=bootstrap,
        topic_prefix=f"e2e-{uuid.uuid4().hex[:12]}.",
        client_id="lavalog-e2e",
        observed_partitions=PARTITIONS,
        decisions_partitions=PARTITIONS,
        state_partitions=PARTITIONS,
        # tansu forms a group in about half the session timeout (docs/kafka.md)
        session_timeout_ms=6_000 if external else 2_000,
        heartbeat_interval_ms=200,
    )


@pytest.fixture
async def e2e_kafka(kafka_broker: str) -> KafkaSettings:
    settings = make_kafka(kafka_broker)
    await ensure_topics(settings)
    return settings


# the cluster as it changes ---------------------------------------------------------------


def labels(obj: Obj) -> dict[str, str]:
    return dict(obj["metadata"].get("labels") or {})


def job_of(pod: Obj) -> str:
    return labels(pod).get("volcano.sh/job-name", "")


def version_of(pod: Obj) -> int:
    annotations = pod["metadata"].get("annotations") or {}
    return int(annotations.get("volcano.sh/job-version", "-1"))


def pod_phase(pod: Obj) -> str:
    return str(pod.get("status", {}).get("phase", "Pending"))


def job_phase(job: Obj | None) -> str:
    return str(((job or {}).get("status") or {}).get("state", {}).get("phase", ""))


Condition = tuple[str, str | None]


def conditions_of(job: Obj) -> list[Condition]:
    return [
        (c["status"], c.get("lastTransitionTime"))
        for c in (job.get("status") or {}).get("conditions") or ()
    ]


def appended_conditions(before: list[Condition], after: list[Condition]) -> list[Condition]:
    """The entries a status write added to `status.conditions`. Volcano keeps one entry per
    phase and moves the one it writes to the end, so `after` is `before` less some entries,
    then the new ones: those after the longest start of `after` found in `before` in order."""
    position = 0
    for index, entry in enumerate(after):
        try:
            position = before.index(entry, position) + 1
        except ValueError:
            return after[index:]
    return []


@dataclass(frozen=True)
class PodCreation:
    name: str
    job: str
    version: int
    uid: str
    time: float


@dataclass
class ClusterLog:
    """Every pod creation and pod phase change in the simulated cluster, as it happens,
    and waiters on predicates over the cluster's current state."""

    cluster: SimulatedCluster
    created: list[PodCreation] = field(default_factory=list)
    #: pod uid -> phases in order (a phase once per change to it); "Deleted" at the end
    phases: dict[str, list[str]] = field(default_factory=dict)
    #: pod uid -> name
    names: dict[str, str] = field(default_factory=dict)
    #: job name -> (phase, time.monotonic() when the cluster stored it), in order
    job_phases: dict[str, list[tuple[str, float]]] = field(default_factory=dict)
    #: pod name -> (phase, time.monotonic()) of every phase change of pods of that name
    pod_times: dict[str, list[tuple[str, float]]] = field(default_factory=dict)
    #: job name -> every phase it went through, from each write of its conditions
    phase_paths: dict[str, list[str]] = field(default_factory=dict)
    _conditions: dict[str, list[Condition]] = field(default_factory=dict)
    _waiters: list[tuple[Callable[[], bool], asyncio.Future[None]]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.cluster.store.subscribe(self._on_change)

    def _on_change(self, change: Change) -> None:
        if change.resource is registry.POD:
            pod = change.entry.obj
            uid = pod["metadata"]["uid"]
            if change.type == "ADDED":
                name = pod["metadata"]["name"]
                self.names[uid] = name
                self.created.append(
                    PodCreation(name, job_of(pod), version_of(pod), uid, time.monotonic())
                )
            seen = self.phases.setdefault(uid, [])
            phase = "Deleted" if change.type == "DELETED" else pod_phase(pod)
            if not seen or seen[-1] != phase:
                seen.append(phase)
                self.pod_times.setdefault(pod["metadata"]["name"], []).append(
                    (phase, time.monotonic())
                )
        elif change.resource is registry.JOB and change.type != "DELETED":
            job = change.entry.obj
            phase = job_phase(job)
            phases = self.job_phases.setdefault(job["metadata"]["name"], [])
            if phase and (not phases or phases[-1][0] != phase):
                phases.append((phase, time.monotonic()))
            self._follow_conditions(job)
        if self._waiters:
            self._check()

    def _check(self) -> None:
        waiting = []
        for predicate, future in self._waiters:
            if future.done():
                continue
            try:
                met = predicate()
            except Exception as exc:  # a broken predicate fails its waiter, not the store
                future.set_exception(exc)
                continue
            if met:
                future.set_result(None)
            else:
                waiting.append((predicate, future))
        self._waiters = waiting

    async def until(
        self, predicate: Callable[[], bool], within: float, what: str | Callable[[], str] = ""
    ) -> None:
        """Return once `predicate()` holds (checked now and after every store write);
        `what` (or what it returns when the wait fails) says what was waited for."""
        if predicate():
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append((predicate, future))
        try:
            async with asyncio.timeout(within):
                await future
        except TimeoutError:
            said = what() if callable(what) else what
            raise AssertionError(f"not within {within} s: {said or predicate}") from None

    def _follow_conditions(self, job: Obj) -> None:
        name = job["metadata"]["name"]
        now = conditions_of(job)
        path = self.phase_paths.setdefault(name, [])
        for phase, _ in appended_conditions(self._conditions.get(name, []), now):
            if not path or path[-1] != phase:  # a write within the phase moves its entry
                path.append(phase)
        self._conditions[name] = now

    def phase_path(self, name: str) -> list[str]:
        """The phases the job went through, as the writes of its `status.conditions` show."""
        return list(self.phase_paths.get(name, ()))

    # reads of the current state (synchronous: for predicates) ---------------------------

    def job(self, name: str) -> Obj | None:
        return self.cluster.objects.find(registry.JOB, NAMESPACE, name)

    def pod(self, name: str) -> Obj | None:
        return self.cluster.objects.find(registry.POD, NAMESPACE, name)

    def pods_of(self, job: str) -> list[Obj]:
        selector = Selector(parse_labels(f"volcano.sh/job-name={job}"))
        return [e.obj for e in self.cluster.objects.store.scan(registry.POD, NAMESPACE, selector)]

    def live_pods(self, job: str) -> list[str]:
        """Pods of the job that are pending or running and not being deleted."""
        return sorted(
            p["metadata"]["name"]
            for p in self.pods_of(job)
            if pod_phase(p) in ("Pending", "Running") and not p["metadata"].get("deletionTimestamp")
        )

    def creations(self, job: str) -> Counter[str]:
        """How many times each pod name of the job was created."""
        return Counter(c.name for c in self.created if c.job == job)

    def created_versions(self) -> Counter[tuple[str, int]]:
        """How many times each (pod name, job version) was created, in all jobs."""
        return Counter((c.name, c.version) for c in self.created)


# the system ------------------------------------------------------------------------------


@dataclass
class Replica:
    """One controller replica running in this process."""

    identity: str
    stop: asyncio.Event
    task: asyncio.Task[None]
    started: list[Health]

    @property
    def health(self) -> Health | None:
        return self.started[0] if self.started else None

    def component(self, name: str) -> Any:
        assert self.health is not None, f"{self.identity} has not started"
        return self.health.components[name]

    @property
    def is_leader(self) -> bool:
        return self.health is not None and bool(self.component("watchers").is_leader)

    async def halt(self) -> None:
        self.stop.set()
        await self.task


@dataclass
class System:
    cluster: SimulatedCluster
    kube: Kube
    kafka: KafkaSettings
    log: ClusterLog
    replicas: list[Replica] = field(default_factory=list)

    async def submit(self, manifest: Obj) -> Obj:
        created: Obj = msgspec.json.decode(await self.kube.request("POST", JOBS, body=manifest))
        return created

    async def job(self, name: str) -> Obj:
        found: Obj = msgspec.json.decode(await self.kube.request("GET", paths.job(NAMESPACE, name)))
        return found

    async def command(self, name: str, verb: str) -> None:
        """`lavalog job VERB default/NAME`, as the CLI does it."""
        await _issue(str(self.cluster.kubeconfig_path), NAMESPACE, name, ACTIONS[verb])

    async def scale(self, name: str, replicas: int, min_available: int | None = None) -> None:
        """Volcano's e2eutil.UpdateJob as its scale tests use it: the first task's
        replicas (and its minAvailable, when given) and the Job's minAvailable changed."""
        tasks = (await self.job(name))["spec"]["tasks"]
        tasks[0]["replicas"] = replicas
        if min_available is not None:
            tasks[0]["minAvailable"] = min_available
        await self.kube.request(
            "PATCH",
            f"{JOBS}/{name}",
            body={"spec": {"minAvailable": replicas, "tasks": tasks}},
            content_type=MERGE_PATCH,
        )

    async def until_phase(self, name: str, phases: Iterable[str], within: float) -> Obj:
        """Event-driven twin of `wait_for_phase`, on the in-process cluster."""
        wanted = set(phases)
        await self.log.until(
            lambda: job_phase(self.log.job(name)) in wanted,
            within,
            f"job {name} in {sorted(wanted)} (it is {job_phase(self.log.job(name))!r})",
        )
        return await self.job(name)

    async def start_replica(
        self,
        identity: str,
        *,
        lease_duration: float = LEASE,
        max_requeues: int = MAX_REQUEUE_NUM,
        phase_events: bool = False,
    ) -> Replica:
        stop = asyncio.Event()
        config = ControllerConfig(
            kafka=self.kafka,
            kubeconfig=str(self.cluster.kubeconfig_path),
            identity=identity,
            http_port=None,
            lease=LeaseTiming.scaled(lease_duration),
            qps=1000.0,
            burst=2000,
            max_requeues=max_requeues,
            phase_events=phase_events,
        )
        started: list[Health] = []
        task = asyncio.create_task(
            run_controller(config, stop=stop, on_started=lambda h, _port: started.append(h)),
            name=f"controller-{identity}",
        )
        replica = Replica(identity, stop, task, started)
        self.replicas.append(replica)
        return replica

    async def ready(self, within: float = 20.0) -> None:
        """Until every replica's components are ready and one of them leads the watchers."""
        deadline = time.monotonic() + within
        while True:
            live = [r for r in self.replicas if not r.task.done()]
            for replica in self.replicas:
                if replica.task.done():
                    replica.task.result()  # a replica that died: say why
            if (
                live
                and all(r.health is not None and r.health.ready() for r in live)
                and any(r.is_leader for r in live)
            ):
                return
            if time.monotonic() > deadline:
                raise AssertionError("the controller did not become ready")
            await asyncio.sleep(0.05)


async def poll_until(predicate: Callable[[], bool], within: float, what: str = "") -> None:
    """Poll `predicate` (state outside the cluster: Kafka groups, leases) until it holds."""
    deadline = time.monotonic() + within
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {within} s: {what or predicate}")
        await asyncio.sleep(0.05)


async def wait_for_phase(kube: Kube, name: str, phases: Iterable[str], within: float) -> Obj:
    """Poll the Job until its `status.state.phase` is one of `phases`; the Job."""
    wanted = set(phases)
    deadline = time.monotonic() + within
    phase = ""
    while True:
        try:
            job: Obj = msgspec.json.decode(await kube.request("GET", paths.job(NAMESPACE, name)))
            phase = job_phase(job)
            if phase in wanted:
                return job
        except KubeError as exc:
            if exc.status != 404:
                raise
        if time.monotonic() > deadline:
            raise AssertionError(f"job {name} not in {sorted(wanted)} within {within} s: {phase!r}")
        await asyncio.sleep(0.05)


@asynccontextmanager
async def running_system(
    kafka: KafkaSettings,
    *,
    replicas: Iterable[str] = ("e2e-1",),
    nodes: int = 2,
    time_scale: float = 50.0,
    lease_duration: float = LEASE,
    max_requeues: int = MAX_REQUEUE_NUM,
    phase_events: bool = False,
    **cluster: Any,
) -> AsyncIterator[System]:
    """A simulated cluster and controller replicas (ready) on `kafka`."""
    async with (
        SimulatedCluster(
            nodes=nodes, time_scale=time_scale, bookmark_interval=0.5, **cluster
        ) as sim,
        connect(str(sim.kubeconfig_path)) as kube,
    ):
        system = System(cluster=sim, kube=kube, kafka=kafka, log=ClusterLog(sim))
        try:
            for identity in replicas:
                await system.start_replica(
                    identity,
                    lease_duration=lease_duration,
                    max_requeues=max_requeues,
                    phase_events=phase_events,
                )
            if system.replicas:
                await system.ready()
            yield system
        finally:
            for replica in system.replicas:
                replica.stop.set()
            await asyncio.gather(*(r.task for r in system.replicas), return_exceptions=True)


@pytest.fixture
async def system(e2e_kafka: KafkaSettings) -> AsyncIterator[System]:
    async with running_system(e2e_kafka) as running:
        yield running
