"""The chaos run: lavalog's promise (nothing lost, nothing done twice) as a measured figure.

One seeded workload of Volcano Jobs of every kind runs twice against the development
broker, a simulated cluster (`lavalog sim`) and two `lavalog run` replicas, each a process
of its own: once without faults, once with faults injected at random (replicas SIGKILLed
one at a time and together, the broker SIGSTOPped, the API server answering 500 and 429,
watches dropped and history expired, a node lost, pods evicted, undecodable messages on
`lavalog.observed`). Then, per job and from the cluster's own record:

- lost: the job's final phase or retryCount differs from the run without faults, or the
  job never settles;
- duplicate: a pod (name, job version) created while another of that name and version
  existed, or created more often than without faults beyond what the faults removed;
- left running: a pod pending or running for a finished job;
- dead letters: each one is one of the undecodable messages the run sent, and each of
  those is dead-lettered;
- audit: every recorded decision is recomputed from the recorded observations
  (`lavalog audit`'s check) for every job.

Outcomes that legitimately depend on timing are left out of the comparison, and counted:
a node loss fails whatever runs on the node at that moment (NodeLost, a PodFailed that the
job's policies act on, or none does and the gang waits for ever, as in Volcano), so the
jobs with a pod on the lost node are not compared; those still unfinished when the faults
end are terminated (`lavalog job terminate`), and all of them are checked for settling,
duplicates (creations alive at once), leftovers and the audit. Evictions are aimed at
running pods of running jobs; no job of the workload has a policy on PodEvicted, so a
replacement pod of the same version changes nothing.

    python bench/chaos.py                       # 300 jobs, the full run (`make chaos`)
    python bench/chaos.py --jobs 40 --seed 7   # the small run `make test` does
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import signal
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import msgspec
from aiokafka import TopicPartition

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.harness import (
    Cluster,
    LavalogRun,
    kafka_settings,
    read_topic,
    say,
    simulator_process,
    table,
)
from lavalog.cli.commands.job import ACTIONS, command_object
from lavalog.controller.actuator.core import paths
from lavalog.controller.broker import DevelopmentBroker
from lavalog.controller.decider.core import replay
from lavalog.controller.kafka import (
    KafkaSettings,
    create_consumer,
    create_producer,
    ensure_topics,
    topic_name,
)
from lavalog.controller.kube import Kube, KubeError, connect
from lavalog.events import topics
from lavalog.events.codec import DecodeError, LogEvent, decode_event
from lavalog.events.deadletter import DeadLetter
from lavalog.projections.core.audit import audit
from tests.e2e.jobs import FOREVER, job, on, task

NAMESPACE = "default"
JOBS = paths.collection("batch.volcano.sh/v1alpha1", "Job", NAMESPACE)
PODS = f"/api/v1/namespaces/{NAMESPACE}/pods"
COMMANDS = f"/apis/bus.volcano.sh/v1alpha1/namespaces/{NAMESPACE}/commands"
FINISHED = frozenset({"Completed", "Failed", "Terminated", "Aborted"})
LIVE = ("Pending", "Running")
VERSION = "volcano.sh/job-version"
JOB_NAME = "volcano.sh/job-name"
DECIDER_GROUP = "lavalog-decider"
NODES = 8
REPLICAS = ("chaos-a", "chaos-b")

Obj = dict[str, Any]


# the workload -----------------------------------------------------------------------------


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


def workload(seed: int, count: int) -> list[Planned]:
    """`count` jobs: every kind at least once, the rest drawn at random; same seed, same jobs."""
    rng = random.Random(seed)
    kinds = [*KINDS, *rng.choices(KINDS, k=max(0, count - len(KINDS)))][:count]
    rng.shuffle(kinds)
    return [plan(kind, f"{kind}-{i:03d}", rng) for i, kind in enumerate(kinds)]


# talking to the cluster ----------------------------------------------------------------------


async def call(kube: Kube, method: str, path: str, **options: Any) -> bytes:
    """The run's own API calls ride out the 500s and 429s it injects."""
    while True:
        try:
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

    def live_pods_of_finished_jobs(self) -> list[str]:
        return sorted(
            p["metadata"]["name"]
            for p in self.pods
            if pod_phase(p) in LIVE and self.phase(job_of(p)) in FINISHED
        )


def phase_of(job: Obj | None) -> str:
    return str(((job or {}).get("status") or {}).get("state", {}).get("phase", ""))


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


# faults -------------------------------------------------------------------------------------

FAULTS = (
    "kill-one", "kill-both", "pause-broker", "api-500", "api-429",
    "watch-drop", "history-410", "node-loss", "evict", "poison",
)  # fmt: skip


@dataclass
class Faults:
    """The faults of one run, drawn from a seed, and what they did."""

    cluster: Cluster
    kube: Kube
    view: View
    broker_pid: int
    replicas: list[LavalogRun]
    kafka: KafkaSettings
    rng: random.Random
    planned: dict[str, Planned]
    pause_seconds: float
    done: Counter[str] = field(default_factory=Counter)
    #: (pod name, job version) -> times the faults removed such a pod
    removed: Counter[tuple[str, int]] = field(default_factory=Counter)
    #: jobs a node loss hit: their outcome depends on the moment
    node_lost: set[str] = field(default_factory=set)
    #: (partition, offset) of each undecodable message sent to lavalog.observed
    poison: set[tuple[int, int]] = field(default_factory=set)
    #: replicas that exited on their own (not killed), with the end of their output
    died: list[str] = field(default_factory=list)
    #: jobs a node loss hit, still unfinished when the faults ended, terminated then
    terminated: list[str] = field(default_factory=list)
    _turn: int = 0
    _lost: set[str] = field(default_factory=set)

    def kinds(self) -> Iterator[str]:
        """Every kind once in a random order, then kinds drawn at random, without end."""
        first = list(FAULTS)
        self.rng.shuffle(first)
        yield from first
        while True:
            yield self.rng.choice(FAULTS)

    async def inject(self, count: int, submitted: asyncio.Event) -> None:
        """At least `count` faults (and every kind once), on until every job is submitted,
        so that they land on jobs in every stage."""
        if count == 0:
            return
        for kind in self.kinds():
            if sum(self.done.values()) >= max(count, len(FAULTS)) and submitted.is_set():
                return
            await asyncio.sleep(self.rng.uniform(0.5, 2.5))
            await self.revive()
            await getattr(self, "_" + kind.replace("-", "_"))()
            self.done[kind] += 1

    async def revive(self) -> None:
        """Start again, and count, each replica that exited without being killed."""
        for replica in self.replicas:
            if not replica.running:
                self.died.append(f"{replica.identity}: {replica.tail()[-600:]}")
                await replica.restart()

    async def _admin(self, method: str, path: str, body: Obj | None = None) -> None:
        async with (
            aiohttp.ClientSession() as http,
            http.request(method, f"{self.cluster.url}/sim/{path}", json=body) as answer,
        ):
            answer.raise_for_status()

    async def _kill_one(self) -> None:
        victim = self.replicas[self._turn % len(self.replicas)]
        self._turn += 1
        victim.kill()
        await asyncio.sleep(self.rng.uniform(0.5, 3.0))
        await victim.restart()

    async def _kill_both(self) -> None:
        for replica in self.replicas:
            replica.kill()
        await asyncio.sleep(self.rng.uniform(0.5, 3.0))
        for replica in self.replicas:
            await replica.restart()

    async def _pause_broker(self) -> None:
        os.kill(self.broker_pid, signal.SIGSTOP)
        try:
            await asyncio.sleep(self.pause_seconds)
        finally:
            os.kill(self.broker_pid, signal.SIGCONT)

    async def _api_errors(self, setting: str) -> None:
        await self._admin("PUT", "faults", {setting: 0.3})
        await asyncio.sleep(self.rng.uniform(3.0, 6.0))
        await self._admin("PUT", "faults", {setting: 0.0})

    async def _api_500(self) -> None:
        await self._api_errors("error_rate")

    async def _api_429(self) -> None:
        await self._api_errors("throttle_rate")

    async def _watch_drop(self) -> None:
        await self._admin("POST", "watches/drop")

    async def _history_410(self) -> None:
        await self._admin("POST", "watches/expire")
        await self._admin("POST", "watches/drop")

    async def _node_loss(self) -> None:
        await self.view.refresh()
        # of the nodes running pods, the one running the fewest: few outcomes to change
        load = Counter(p["spec"].get("nodeName") for p in self.view.pods if pod_phase(p) in LIVE)
        nodes = [n for n in (f"node-{i}" for i in range(1, NODES + 1)) if load[n]]
        node = min(nodes or ["node-1"], key=lambda n: (load[n], self.rng.random()))
        # what ran there just before, and what failed NodeLost (a pod bound meanwhile)
        hit = {p["metadata"]["uid"]: p for p in self._on(node) if pod_phase(p) in LIVE}
        await self._admin("POST", f"nodes/{node}/lose")
        await self.view.refresh()
        hit |= {
            p["metadata"]["uid"]: p
            for p in self._on(node)
            if (p.get("status") or {}).get("reason") == "NodeLost"
        }
        for uid, pod in hit.items():
            if uid not in self._lost:
                self._lost.add(uid)
                self.node_lost.add(job_of(pod))
                self.removed[pod["metadata"]["name"], version_of(pod)] += 1
        await asyncio.sleep(self.rng.uniform(3.0, 6.0))
        await self._admin("POST", f"nodes/{node}/restore")

    async def end_node_loss_victims(self) -> None:
        """Terminate the jobs a node loss hit that have not finished: some never will (a
        gang member failed with NodeLost and no policy acts on it, so the gang waits in
        Pending for ever, as in Volcano); they are compared for nothing but duplicates,
        leftovers and the audit, which termination exercises too."""
        await self.view.refresh()
        for name in sorted(self.node_lost):
            found = self.view.jobs.get(name)
            if found is not None and phase_of(found) not in FINISHED:
                body = command_object(
                    NAMESPACE, name, found["metadata"]["uid"], ACTIONS["terminate"]
                )
                await call(self.kube, "POST", COMMANDS, body=body)
                self.terminated.append(name)

    def _on(self, node: str) -> list[Obj]:
        return [p for p in self.view.pods if p["spec"].get("nodeName") == node]

    async def _evict(self) -> None:
        """Evict up to three running pods of running jobs whose policies ignore evictions."""
        await self.view.refresh()
        candidates = sorted(
            (p for p in self.view.pods if self._evictable(p)), key=lambda p: p["metadata"]["name"]
        )
        for pod in self.rng.sample(candidates, min(3, len(candidates))):
            try:
                await self._admin("POST", f"pods/{NAMESPACE}/{pod['metadata']['name']}/evict")
            except aiohttp.ClientResponseError:
                continue  # gone in the meantime
            self.removed[pod["metadata"]["name"], version_of(pod)] += 1

    def _evictable(self, pod: Obj) -> bool:
        name = job_of(pod)
        found, planned = self.view.jobs.get(name), self.planned.get(name)
        return (
            planned is not None  # no job of the workload has a policy on PodEvicted
            and phase_of(found) == "Running"
            and pod_phase(pod) == "Running"
            and not pod["metadata"].get("deletionTimestamp")
            and version_of(pod) == int(((found or {}).get("status") or {}).get("version", 0))
        )

    async def _poison(self) -> None:
        """Undecodable bytes on the partition of a job of the run, between its facts."""
        target = self.rng.choice(sorted(self.planned))
        junk = self.rng.randbytes(self.rng.randint(1, 64))
        async with create_producer(self.kafka) as producer:
            sent = await producer.send_and_wait(
                topic_name(self.kafka, topics.OBSERVED), junk, key=f"{NAMESPACE}/{target}".encode()
            )
        self.poison.add((sent.partition, sent.offset))


# one run -------------------------------------------------------------------------------------


@dataclass
class Outcome:
    #: job -> (phase, retryCount); "" for a job that did not settle
    jobs: dict[str, tuple[str, int]]
    #: the simulator's record of pod creations
    created: list[Obj]
    left_running: list[str]
    settle_seconds: float
    settled: bool
    letters: list[DeadLetter]
    #: recorded decisions, those recomputed alike, jobs audited, jobs consistent
    audit: tuple[int, int, int, int]
    faults: Faults | None = None
    differences: list[str] = field(default_factory=list)
    #: job -> where an unsettled job stopped ("Pending v0", or "no status")
    stuck: dict[str, str] = field(default_factory=dict)


async def run(
    broker: DevelopmentBroker,
    jobs: list[Planned],
    *,
    seed: int,
    faults: int,
    pause_seconds: float,
    settle_within: float,
    time_scale: float,
    submit_every: float,
    output: Path,
) -> Outcome:
    """The workload once, with `faults` faults (none: the reference run)."""
    kafka = kafka_settings(broker.bootstrap_servers, 3, prefix=f"chaos-{uuid.uuid4().hex[:8]}.")
    await ensure_topics(kafka)
    async with AsyncExitStack() as stack:
        cluster = await stack.enter_async_context(
            simulator_process(
                nodes=NODES, pods_per_node=110, time_scale=time_scale, history=100_000
            )
        )
        kube = await stack.enter_async_context(connect(str(cluster.kubeconfig)))
        replicas = [
            LavalogRun(kafka, cluster.kubeconfig, output / f"{name}.log", name) for name in REPLICAS
        ]
        for replica in replicas:
            stack.push_async_callback(replica.stop)
            await replica.start()
        for replica in replicas:
            await replica.ready()
        view = View(kube)
        await view.refresh()
        background = [asyncio.create_task(view.follow())]
        chaos = Faults(
            cluster, kube, view, broker.pid or 0, replicas, kafka,
            random.Random(seed * 7919 + 1), {p.name: p for p in jobs}, pause_seconds,
        )  # fmt: skip
        try:
            background += [asyncio.create_task(drive(kube, view, p)) for p in jobs]
            submitted = asyncio.Event()
            injecting = asyncio.create_task(chaos.inject(faults, submitted))
            for planned in jobs:
                await submit(kube, planned)
                await asyncio.sleep(submit_every)
            submitted.set()
            await injecting
            await chaos.revive()
            await chaos.end_node_loss_victims()
            calm = time.monotonic()
            settled = await settle(view, kafka, [p.name for p in jobs], settle_within)
            settle_seconds = time.monotonic() - calm
            if not settled:  # the evidence of a stall: where each replica's tasks wait
                for replica in replicas:
                    replica.log_task_stacks()
                await asyncio.sleep(1.0)
        finally:
            for task_ in background:
                task_.cancel()
            await asyncio.gather(*background, return_exceptions=True)
        created = await creations(cluster)
        await view.refresh()
        outcome = Outcome(
            jobs={
                p.name: (view.phase(p.name), retry_count(view.jobs.get(p.name)))
                if view.phase(p.name) in FINISHED
                else ("", 0)
                for p in jobs
            },
            created=created,
            left_running=view.live_pods_of_finished_jobs(),
            settle_seconds=settle_seconds,
            settled=settled,
            stuck={
                p.name: where_stuck(view.jobs.get(p.name))
                for p in jobs
                if view.phase(p.name) not in FINISHED
            },
            letters=await dead_letters(kafka),
            audit=await audit_all(kafka),
            faults=chaos if faults else None,
        )
    return outcome


def where_stuck(job: Obj | None) -> str:
    """An unfinished job's phase and version, as a lost transition's evidence."""
    status = (job or {}).get("status") or {}
    phase = phase_of(job)
    return f"{phase} v{status.get('version', 0)}" if phase else "no status"


def retry_count(job: Obj | None) -> int:
    return int(((job or {}).get("status") or {}).get("retryCount", 0))


async def settle(view: View, kafka: KafkaSettings, names: list[str], within: float) -> bool:
    """Until every job has finished, nothing runs for it and the deciders have read all of
    `lavalog.observed`; False if that does not happen `within` seconds."""

    def finished() -> bool:
        return (
            all(view.phase(n) in FINISHED for n in names) and not view.live_pods_of_finished_jobs()
        )

    try:
        async with asyncio.timeout(within):
            while True:
                await view.until(finished)
                if await decider_caught_up(kafka):
                    await view.refresh()
                    if finished():
                        return True
                await asyncio.sleep(0.5)
    except TimeoutError:
        return False


async def decider_caught_up(kafka: KafkaSettings) -> bool:
    """The decider group has committed every message of `lavalog.observed`."""
    consumer = create_consumer(kafka, group_id=DECIDER_GROUP)
    await consumer.start()
    try:
        name = topic_name(kafka, topics.OBSERVED)
        parts = [TopicPartition(name, p) for p in range(kafka.observed_partitions)]
        ends = await consumer.end_offsets(parts)
        committed = [await consumer.committed(tp) or 0 for tp in parts]
        return all(done >= ends[tp] for tp, done in zip(parts, committed, strict=True))
    finally:
        await consumer.stop()


async def creations(cluster: Cluster) -> list[Obj]:
    async with aiohttp.ClientSession() as http, http.get(f"{cluster.url}/sim/pods/created") as got:
        items: list[Obj] = (await got.json())["items"]
        return items


async def dead_letters(kafka: KafkaSettings) -> list[DeadLetter]:
    records = await read_topic(kafka, topics.DEADLETTER, kafka.deadletter_partitions)
    return [msgspec.json.decode(r.value, type=DeadLetter) for r in records]


async def audit_all(kafka: KafkaSettings) -> tuple[int, int, int, int]:
    """`lavalog audit` of every job, from the topics: (decisions recorded, reproduced
    field for field, jobs, jobs without a difference)."""
    events: dict[str, list[LogEvent]] = {}
    for topic, partitions in (
        (topics.OBSERVED, kafka.observed_partitions),
        (topics.DECISIONS, kafka.decisions_partitions),
    ):
        for record in await read_topic(kafka, topic, partitions):
            try:
                event = decode_event(record.value)
            except DecodeError:
                continue  # dead-lettered: accounted for by the dead letter check
            events.setdefault(event.key, []).append(event)
    recorded = reproduced = consistent = 0
    for key in sorted(events):
        report = audit(events[key], replay)
        wrong = {d.id for d in report.differences if d.recorded is not None}
        recorded += report.recorded
        reproduced += report.recorded - len(wrong)
        consistent += report.ok
        if not report.ok:
            say(
                f"audit {key}: "
                + "; ".join(f"{d.kind} {d.id} {d.type}" for d in report.differences)
            )
    return recorded, reproduced, len(events), consistent


# the comparison ------------------------------------------------------------------------------


@dataclass
class Verdict:
    lost: list[str]
    duplicates: list[str]
    left_running: list[str]
    unaccounted_letters: list[str]
    #: replica processes that exited without being killed
    died: list[str]
    compared: int
    timing_dependent: int

    @property
    def ok(self) -> bool:
        return not (
            self.lost
            or self.duplicates
            or self.left_running
            or self.unaccounted_letters
            or self.died
        )


def compare(reference: Outcome, chaotic: Outcome) -> Verdict:
    faults = chaotic.faults
    assert faults is not None
    lost = [
        f"{name}: never settled ({chaotic.stuck.get(name, '?')})"
        for name, (phase, _) in chaotic.jobs.items()
        if not phase
    ]
    compared = 0
    for name, (phase, retries) in chaotic.jobs.items():
        if not phase or name in faults.node_lost:
            continue
        compared += 1
        if (phase, retries) != reference.jobs[name]:
            lost.append(f"{name}: {phase}/{retries}, without faults {reference.jobs[name]}")
    lost += [f"{n}: did not settle without faults" for n, (p, _) in reference.jobs.items() if not p]
    return Verdict(
        lost=lost,
        duplicates=duplicates(reference.created, chaotic.created, faults),
        left_running=chaotic.left_running + reference.left_running,
        unaccounted_letters=unaccounted(chaotic.letters, faults.poison, faults.kafka),
        died=faults.died,
        compared=compared,
        timing_dependent=len(faults.node_lost),
    )


def _key(record: Obj) -> tuple[str, int]:
    return record["name"], int(record["jobVersion"] or -1)


def duplicates(reference: list[Obj], chaotic: list[Obj], faults: Faults) -> list[str]:
    """Pods made twice: one (name, version) alive twice at once, or made more often than
    without faults beyond the pods of that (name, version) the faults removed."""
    found = []
    alive: dict[tuple[str, int], Obj] = {}
    for record in sorted(chaotic, key=lambda r: r["createdVersion"]):
        key = _key(record)
        before = alive.get(key)
        if before is not None and (
            before["deletedVersion"] is None or before["deletedVersion"] > record["createdVersion"]
        ):
            found.append(f"{key[0]} v{key[1]}: created while {before['uid']} existed")
        alive[key] = record
    expected = Counter(_key(r) for r in reference)
    for key, times in Counter(_key(r) for r in chaotic).items():
        job_name = key[0].rsplit("-", 2)[0]
        if job_name in faults.node_lost:
            continue
        extra = times - expected[key] - faults.removed[key]
        if extra > 0:
            found.append(
                f"{key[0]} v{key[1]}: created {times} times, {expected[key]} without faults, "
                f"{faults.removed[key]} removed by faults"
            )
    return found


def unaccounted(
    letters: list[DeadLetter], poison: set[tuple[int, int]], kafka: KafkaSettings
) -> list[str]:
    observed = topic_name(kafka, topics.OBSERVED)
    lettered = {(d.partition, d.offset) for d in letters if d.topic == observed}
    wrong = [
        f"dead letter {d.topic}[{d.partition}]@{d.offset} by {d.consumer}: {d.error}"
        for d in letters
        if d.topic != observed or (d.partition, d.offset) not in poison
    ]
    wrong += [f"poison {p}@{o} never dead-lettered" for p, o in sorted(poison - lettered)]
    return wrong


# the whole run ------------------------------------------------------------------------------


@dataclass
class Report:
    planned: list[Planned]
    reference: Outcome
    chaotic: Outcome
    verdict: Verdict

    @property
    def audit_share(self) -> float:
        recorded, reproduced, _, _ = self.chaotic.audit
        return 100.0 * reproduced / recorded if recorded else 0.0

    @property
    def ok(self) -> bool:
        audits = (self.reference.audit, self.chaotic.audit)
        return (
            self.verdict.ok
            and self.reference.settled
            and self.chaotic.settled
            and all(a[0] == a[1] and a[2] == a[3] for a in audits)
        )


async def chaos(
    *,
    seed: int,
    jobs: int,
    faults: int,
    pause_seconds: float = 10.0,
    settle_within: float = 240.0,
    time_scale: float = 50.0,
    submit_every: float = 0.3,
    output_dir: Path | None = None,
) -> Report:
    """The workload without faults, then with them, and the comparison."""
    planned = workload(seed, jobs)
    with tempfile.TemporaryDirectory(prefix="lavalog-chaos-") as scratch:
        logs = output_dir or Path(scratch)
        async with DevelopmentBroker(log_path=logs / "broker.log") as broker:
            common: dict[str, Any] = dict(
                seed=seed, pause_seconds=pause_seconds, settle_within=settle_within,
                time_scale=time_scale, submit_every=submit_every,
            )  # fmt: skip
            say(f"chaos: seed {seed}, {jobs} jobs, reference run without faults")
            reference = await run(
                broker, planned, faults=0, output=folder(logs, "reference"), **common
            )
            say(f"chaos: the same jobs with {faults} faults")
            chaotic = await run(
                broker, planned, faults=faults, output=folder(logs, "chaos"), **common
            )
    return Report(planned, reference, chaotic, compare(reference, chaotic))


def folder(parent: Path, name: str) -> Path:
    """Where one run's controllers write their output."""
    path = parent / name
    path.mkdir(parents=True, exist_ok=True)
    return path


def print_report(report: Report) -> None:
    faults = report.chaotic.faults
    assert faults is not None
    verdict = report.verdict
    kinds = Counter(p.kind for p in report.planned)
    table(["job kind", "jobs"], [[k, str(n)] for k, n in sorted(kinds.items())])
    table(["fault", "times"], [[k, str(faults.done[k])] for k in FAULTS])
    recorded, reproduced, audited, consistent = report.chaotic.audit
    rows = [
        ("jobs", str(len(report.planned))),
        ("faults injected", str(sum(faults.done.values()))),
        ("settle time without faults (s)", f"{report.reference.settle_seconds:.1f}"),
        ("settle time after the last fault (s)", f"{report.chaotic.settle_seconds:.1f}"),
        ("jobs compared (phase, retryCount)", str(verdict.compared)),
        ("jobs hit by a node loss (not compared)", str(verdict.timing_dependent)),
        ("  of them terminated once the faults ended", str(len(faults.terminated))),
        ("pods evicted or lost", str(sum(faults.removed.values()))),
        ("lost transitions", str(len(verdict.lost))),
        ("duplicate pods", str(len(verdict.duplicates))),
        ("pods left running for finished jobs", str(len(verdict.left_running))),
        ("dead letters (all poison sent)", f"{len(report.chaotic.letters)} ({len(faults.poison)})"),
        ("unaccounted dead letters", str(len(verdict.unaccounted_letters))),
        ("replicas that exited unkilled", str(len(verdict.died))),
        ("decisions reproduced by audit", f"{reproduced}/{recorded} ({report.audit_share:.1f}%)"),
        ("jobs audited consistent", f"{consistent}/{audited}"),
    ]
    table(["chaos run", "value"], [list(r) for r in rows])
    for line in [
        *verdict.lost,
        *verdict.duplicates,
        *verdict.left_running,
        *verdict.unaccounted_letters,
        *verdict.died,
    ]:
        say(f"  {line}")
    say("\nchaos: " + ("PASS" if report.ok else "FAIL"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=300)
    parser.add_argument("--faults", type=int, default=30, help="at least this many faults")
    parser.add_argument(
        "--submit-every", type=float, default=0.3, help="seconds between two submissions"
    )
    parser.add_argument("--pause", type=float, default=10.0, help="seconds the broker is stopped")
    parser.add_argument("--logs", type=Path, help="keep the controllers' output here")
    args = parser.parse_args()
    if args.logs:
        args.logs.mkdir(parents=True, exist_ok=True)
    report = asyncio.run(
        chaos(
            seed=args.seed,
            jobs=args.jobs,
            faults=args.faults,
            pause_seconds=args.pause,
            submit_every=args.submit_every,
            output_dir=args.logs,
        )
    )
    print_report(report)
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
