"""Scale: 10,000 Volcano Jobs submitted at once (one pod each, or `--pods-per-job 10`:
Volcano's design scale of 100,000 pods); time until all their pods exist.

    python bench/scale.py [--jobs 10000] [--pods-per-job 1] [--qps 5000] [--burst 10000]
                          [--processes one|components]

The simulated cluster (`lavalog sim`), the development broker, the controller and the
projections (`lavalog projections serve`) run as processes of their own, as in a
deployment; this process submits the Jobs (32 in flight) and watches pods and Jobs,
printing when every pod exists and when every Job is Running. The controller's actuator
rate limit is raised (`ControllerConfig(qps=, burst=)`; at the default qps=50, 10,000
pod creates alone take 200 s). Baseline from the same run: the same number of bare pods
POSTed directly with the actuator's concurrency (32) after the controller has stopped;
and the cluster's floor: the same Jobs on a new simulated cluster, this process making
their PodGroups and pods as the controller would (`cluster_floor.py`), which no
controller's run of the shape beats on this cluster.
Each process's CPU time says what limits the run where: on these cores, all of theirs
together; with a free core for each, the busiest one's (`--processes components` runs
the controller's watchers, decider and actuator in a process each, to see which of them).
Reference, not measured: Volcano's tuning guide reports ~180-250 s for 10,000 one-pod
Jobs on a real cluster. Then, from the same run: the API calls the controller made per
job and per pod until all were Running, by verb and resource, counted by the API server
(the benchmark's own requests taken off), beside Volcano's; the controller's resident
memory (idle, at the end, peak; per 1,000 jobs); the decider's state per job (its
snapshot on `lavalog.state`, written as the controller stops); and the projections' lag
when every Job is Running and how long they take to catch up. `--finish S` runs each
pod S simulated seconds and waits until every Job is Completed too: the memory then
says whether finished jobs are let go.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Generic, TypeVar

import aiohttp
import msgspec

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from aiokafka import TopicPartition

from bench.cluster_floor import make_gangs
from bench.harness import (
    ENV,
    LAYOUTS,
    ROOT,
    ControllerChild,
    bounded,
    controller_processes,
    cpu_seconds,
    kafka_settings,
    metric,
    metric_series,
    read_topic,
    run_benchmark,
    say,
    simulator_process,
    stop_child,
    table,
)
from lavalog.controller.broker import DevelopmentBroker, free_port
from lavalog.controller.decider.core.snapshots import CHECKPOINT_KEY
from lavalog.controller.kafka import KafkaSettings, create_consumer, ensure_topics, topic_name
from lavalog.controller.kube import Kube, connect
from lavalog.controller.watchers.core.lease import LeaseTiming
from lavalog.events.codec import decode_decision
from lavalog.events.decisions import StatusWrite
from lavalog.events.topics import DECISIONS, OBSERVED, STATE, split_job_key

T = TypeVar("T")
NAMESPACE = "scale"
RAW_NAMESPACE = "raw"
FLOOR_NAMESPACE = "floor"
CONCURRENCY = 32
JOBS_PATH = f"/apis/batch.volcano.sh/v1alpha1/namespaces/{NAMESPACE}/jobs"
PODS_PATH = f"/api/v1/namespaces/{NAMESPACE}/pods"
PODGROUPS_PATH = f"/apis/scheduling.volcano.sh/v1beta1/namespaces/{NAMESPACE}/podgroups"
MB = 1024 * 1024


def container(finish: float | None) -> dict[str, Any]:
    return {
        "name": "main",
        "image": "busybox",
        "command": ["sh", "-c", "sleep infinity" if finish is None else f"sleep {finish:g}"],
        "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}},
    }


def job(index: int, pods: int, finish: float | None, namespace: str = NAMESPACE) -> dict[str, Any]:
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": f"job-{index}", "namespace": namespace},
        "spec": {
            "minAvailable": pods,
            "schedulerName": "volcano",
            "tasks": [
                {
                    "name": "main",
                    "replicas": pods,
                    "template": {
                        "spec": {"restartPolicy": "Never", "containers": [container(finish)]}
                    },
                }
            ],
        },
    }


def bare_pod(index: int) -> dict[str, Any]:
    """A pod no scheduler takes: the API server's create path alone."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"pod-{index}", "namespace": RAW_NAMESPACE},
        "spec": {"schedulerName": "bench-none", "containers": [container(None)]},
    }


class _Phase(msgspec.Struct):
    phase: str = ""


class _Status(msgspec.Struct):
    state: _Phase = msgspec.field(default_factory=_Phase)


class _Meta(msgspec.Struct):
    name: str


class _Job(msgspec.Struct):
    metadata: _Meta
    status: _Status = msgspec.field(default_factory=_Status)


class _PodSpec(msgspec.Struct):
    nodeName: str = ""


class _Pod(msgspec.Struct):
    metadata: _Meta
    spec: _PodSpec = msgspec.field(default_factory=_PodSpec)
    status: _Phase = msgspec.field(default_factory=_Phase)


class _Group(msgspec.Struct):
    metadata: _Meta
    status: _Phase = msgspec.field(default_factory=_Phase)


class _WatchEvent(msgspec.Struct, Generic[T]):
    type: str
    object: T


_decode = msgspec.json.Decoder(_WatchEvent[_Job]).decode
_decode_pod = msgspec.json.Decoder(_WatchEvent[_Pod]).decode
_decode_group = msgspec.json.Decoder(_WatchEvent[_Group]).decode


class Progress:
    """Counts from the watches, when each count reached its goal, and a timeline of them."""

    def __init__(self, jobs: int, pods: int, on_goal: Callable[[str], None]) -> None:
        self.on_goal = on_goal
        self.goals = {"submitted": jobs, "pods": pods, "running": jobs, "completed": jobs}
        #: Jobs Running (and Completed) and pods created, by name; the pods bound to a node
        #: and Running, the PodGroups created and those vc-scheduler admitted (past Pending)
        self.counts: dict[str, set[str]] = {
            what: set()
            for what in ("groups", "admitted", "pods", "bound", "started", "running", "completed")
        }
        self.submitted = 0
        self.started = 0.0
        self.done: dict[str, float] = {}
        #: wall-clock times (to compare with the log's timestamps) of each Job's
        #: submission, of its last pod seen Running, and of its Running status seen
        self.submitted_at: dict[str, float] = {}
        self.pods_started_at: dict[str, float] = {}
        self.running_at: dict[str, float] = {}
        self._started_of: Counter[str] = Counter()
        self._pods_per_job = pods // jobs
        #: the Jobs' status writes seen on their watch (every change to a Job is one), by
        #: the phase each wrote
        self.status_writes: Counter[str] = Counter()

    def add(self, what: str, name: str) -> None:
        names = self.counts[what]
        if name in names:
            return
        names.add(name)
        if what == "running":
            self.running_at[name] = time.time()
        elif what == "started":
            job = name.rsplit("-", 2)[0]  # <job>-<task>-<index>
            self._started_of[job] += 1
            if self._started_of[job] == self._pods_per_job:
                self.pods_started_at[job] = time.time()
        if what in self.goals:
            self.reached(what, len(names))

    def reached(self, what: str, count: int) -> None:
        if count >= self.goals[what] and what not in self.done:
            self.done[what] = time.perf_counter()
            self.on_goal(what)

    def row(self) -> dict[str, int]:
        """The counts now."""
        return {"submitted": self.submitted} | {w: len(n) for w, n in self.counts.items()}

    def since(self, start: dict[str, float], end: dict[str, float]) -> list[float]:
        """Per Job with both, the seconds from `start` to `end`, in order."""
        return sorted(at - start[name] for name, at in end.items() if name in start)


#: Volcano's calls for a Job (pkg/controllers/job/job_controller_actions.go): the PodGroup
#: and each pod created once; the status written by `initiateJob` and by every `syncJob`
#: that changes it (Pending, pods created, each pod Running); Jobs read from its informer
#: cache; no Events on the way to Running but a Warning PodGroupPending from each
#: `syncJob` that finds the PodGroup's latest condition Unschedulable (`recordPodGroupEvent`:
#: vc-scheduler's gang plugin sets it when a session sees a gang with pods still missing)
VOLCANO_CALLS = {
    "create podgroups": ("1", "-"),
    "create pods": ("-", "1"),
    "update jobs/status": ("2 + 1 per pod", "-"),
    "get jobs": ("0 (cache)", "-"),
    "create events": ("0 + 1 per sync while Unschedulable", "-"),
}


async def api_calls(kube: Kube) -> tuple[Counter[str], Counter[str]]:
    """Requests the simulated API server has served so far, by "verb resource", and those
    it answered with an error, by "verb resource code"."""
    state = msgspec.json.decode(await kube.request("GET", "/sim/state"))
    return Counter(state["apiCalls"]), Counter(state["apiRefusals"])


async def job_event_reasons(kube: Kube) -> Counter[str]:
    """The Events on the benchmark's Jobs by type and reason: what the controller's
    `create events` calls were about (the simulated scheduler and kubelets write theirs
    on PodGroups, pods and nodes)."""
    listed = msgspec.json.decode(
        await kube.request(
            "GET",
            f"/api/v1/namespaces/{NAMESPACE}/events",
            query={"fieldSelector": "involvedObject.kind=Job"},
        )
    )
    return Counter(f"{event['type']} {event['reason']}" for event in listed["items"])


async def resource_version(kube: Kube) -> int:
    """The API server's resourceVersion now: every write (a create, an update, a status
    write, an Event, by any client or by its scheduler and kubelets) takes the next one."""
    listed = msgspec.json.decode(
        await kube.request("GET", "/api/v1/namespaces", query={"limit": 1})
    )
    return int(listed["metadata"]["resourceVersion"])


async def messages(settings: KafkaSettings, partitions: int) -> dict[str, int]:
    """Records on the observed and decisions topics (their partitions' end offsets)."""
    consumer = create_consumer(settings, group_id=None)
    await consumer.start()
    try:
        counts = {}
        for topic in (OBSERVED, DECISIONS):
            name = topic_name(settings, topic)
            ends = await consumer.end_offsets([TopicPartition(name, p) for p in range(partitions)])
            counts[topic] = sum(ends.values())
        return counts
    finally:
        await consumer.stop()


async def follow(
    kube: Kube, path: str, on_line: Callable[[bytes], bool], own: Counter[str]
) -> None:
    """Watch `path` from now on until `on_line` (each event's JSON) returns True; `own`
    counts its requests."""
    resource = path.rsplit("/", 1)[1]
    own[f"list {resource}"] += 1
    own[f"watch {resource}"] += 1
    listed = msgspec.json.decode(await kube.request("GET", path, query={"limit": 1}))
    query = {"watch": 1, "resourceVersion": listed["metadata"]["resourceVersion"]}
    async with kube.stream(path, query, request_timeout=7200) as lines:
        async for line in lines:
            if on_line(line):
                return


async def backlog(metrics: Sequence[str]) -> dict[str, int]:
    """The controllers' backlog now: facts not decided yet (`lavalog_decider_lag`, every
    partition) and decisions not carried out yet (`lavalog_actuator_in_flight`), summed
    over the processes that have them."""
    found = {"undecided": 0, "not carried out": 0}
    for url in metrics:
        found["undecided"] += int(sum(await metric_series(url, "lavalog_decider_lag")))
        found["not carried out"] += int(sum(await metric_series(url, "lavalog_actuator_in_flight")))
    return found


async def submit_jobs(
    kube: Kube,
    args: argparse.Namespace,
    own: Counter[str],
    progress: Progress,
    metrics: Sequence[str],
    *,
    every: float,
) -> tuple[dict[str, float], list[tuple[float, dict[str, int]]]]:
    """Seconds until all submitted, all pods, all Running (and all Completed with
    `--finish`), and the timeline: the counts and the backlog of the controllers whose
    /metrics are `metrics`, every `every` seconds; `own` counts this side's requests."""
    last = "running" if args.finish is None else "completed"

    def on_pod(line: bytes) -> bool:
        event = _decode_pod(line)
        pod = event.object
        if event.type == "ADDED":
            progress.add("pods", pod.metadata.name)
        if event.type != "DELETED":
            if pod.spec.nodeName:
                progress.add("bound", pod.metadata.name)
            if pod.status.phase == "Running":
                progress.add("started", pod.metadata.name)
        return last in progress.done

    def on_group(line: bytes) -> bool:
        event = _decode_group(line)
        progress.add("groups", event.object.metadata.name)
        if event.object.status.phase not in ("", "Pending"):
            progress.add("admitted", event.object.metadata.name)
        return last in progress.done

    def on_job(line: bytes) -> bool:
        event = _decode(line)
        phase = event.object.status.state.phase
        if event.type == "MODIFIED":
            progress.status_writes[phase] += 1
        if phase == "Running":
            progress.add("running", event.object.metadata.name)
        elif phase == "Completed":
            progress.add("completed", event.object.metadata.name)
        return last in progress.done

    async def submit(index: int) -> None:
        own["create jobs"] += 1
        await kube.request("POST", JOBS_PATH, body=job(index, args.pods_per_job, args.finish))
        progress.submitted_at[f"job-{index}"] = time.time()
        progress.submitted += 1
        progress.reached("submitted", progress.submitted)

    # the Jobs' watch ends the run; the others, which may see nothing after it, are stopped
    jobs = asyncio.create_task(follow(kube, JOBS_PATH, on_job, own))
    others = [
        asyncio.create_task(follow(kube, path, on_line, own))
        for path, on_line in ((PODS_PATH, on_pod), (PODGROUPS_PATH, on_group))
    ]
    await asyncio.sleep(0.5)  # the watches are open
    started = time.perf_counter()
    progress.started = time.time()
    submitting = asyncio.create_task(bounded(args.jobs, CONCURRENCY, submit))
    timeline: list[tuple[float, dict[str, int]]] = []
    while not jobs.done():
        watching = [jobs, *(watch for watch in others if not watch.done())]
        await asyncio.wait(watching, timeout=every, return_when="FIRST_COMPLETED")
        for watch in (jobs, *others):
            if watch.done() and watch.exception() is not None:
                raise RuntimeError("a watch failed") from watch.exception()
        elapsed = time.perf_counter() - started
        row = progress.row() | await backlog(metrics)
        timeline.append((elapsed, row))
        say(f"  {elapsed:6.1f} s  " + "  ".join(f"{what} {n:>7,}" for what, n in row.items()))
    for watch in others:
        watch.cancel()
    await asyncio.gather(*others, return_exceptions=True)
    await asyncio.gather(jobs, submitting)
    return {what: at - started for what, at in progress.done.items()}, timeline


async def create_bare_pods(kube: Kube, count: int) -> float:
    collection = f"/api/v1/namespaces/{RAW_NAMESPACE}/pods"
    await kube.request("POST", "/api/v1/namespaces", body={"metadata": {"name": RAW_NAMESPACE}})
    started = time.perf_counter()
    await bounded(count, CONCURRENCY, lambda i: _post(kube, collection, bare_pod(i)))
    return time.perf_counter() - started


async def _post(kube: Kube, collection: str, body: dict[str, Any]) -> None:
    await kube.request("POST", collection, body=body)


@asynccontextmanager
async def projections_process(bootstrap: str) -> AsyncIterator[tuple[str, int]]:
    """`lavalog projections serve` (SQLite) on the benchmark's topics; yields its /metrics URL
    and its process id once /readyz answers 200."""
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="lavalog-bench-") as state:
        command = [
            sys.executable, "-m", "lavalog.cli.main", "projections", "serve",
            "--bootstrap-servers", bootstrap, "--topic-prefix", "bench.", "--state-dir", state,
            "--port", str(port), "--log-level", "warning",
        ]  # fmt: skip
        proc = await asyncio.create_subprocess_exec(
            *command, cwd=ROOT, env=ENV, stdout=subprocess.DEVNULL
        )
        base = f"http://127.0.0.1:{port}"
        try:
            async with aiohttp.ClientSession() as session, asyncio.timeout(60):
                while True:
                    try:
                        async with session.get(f"{base}/readyz") as response:
                            if response.status == 200:
                                break
                    except aiohttp.ClientError:
                        pass
                    await asyncio.sleep(0.2)
            yield f"{base}/metrics", proc.pid
        finally:
            await stop_child(proc)


async def projections_lag(metrics: str) -> int:
    """Messages of the topics the projections have not read yet (all partitions)."""
    return int(sum(await metric_series(metrics, "lavalog_projections_consumer_lag")))


async def caught_up(metrics: str, within: float) -> tuple[int, float | None]:
    """The projections' lag now, and the seconds until it is 0 (None: not within `within`)."""
    lag = await projections_lag(metrics)
    started = time.perf_counter()
    while time.perf_counter() - started < within:
        if await projections_lag(metrics) == 0:
            return lag, time.perf_counter() - started
        await asyncio.sleep(0.5)
    return lag, None


async def running_decided(settings: KafkaSettings, partitions: int) -> dict[str, float]:
    """Per Job, when the decider recorded its Running status write (the record's time)."""
    decided: dict[str, float] = {}
    for record in await read_topic(settings, DECISIONS, partitions):
        decision = decode_decision(record.value)
        if isinstance(decision, StatusWrite) and decision.status.state.phase == "Running":
            decided.setdefault(split_job_key(decision.key)[1], record.timestamp / 1000)
    return decided


async def decider_state(settings: KafkaSettings, partitions: int) -> tuple[int, float]:
    """Jobs in the decider's last snapshot on `lavalog.state`, and its bytes per job."""
    latest: dict[bytes, int] = {}
    for record in await read_topic(settings, STATE, partitions):
        if record.key == CHECKPOINT_KEY.encode():
            continue
        if record.value is None:
            latest.pop(record.key, None)
        else:
            latest[record.key] = len(record.value)
    return len(latest), (sum(latest.values()) / len(latest) if latest else 0.0)


class Memory:
    """The controller's resident memory: idle, when every Job is Running, at the end, peak
    (with its components in processes of their own, the sum of theirs)."""

    def __init__(self, controller: Sequence[ControllerChild]) -> None:
        self.controller = controller
        self.idle = self._now()[0]
        self.at: dict[str, int] = {}
        self.peak = 0

    def _now(self) -> tuple[int, int]:
        readings = [child.memory() for child in self.controller]
        return sum(rss for rss, _ in readings), sum(peak for _, peak in readings)

    def sample(self, when: str) -> None:
        self.at[when], self.peak = self._now()


class Cpu:
    """The CPU time each process of the run used from the first submission on, and what
    the whole machine did meanwhile (on a shared machine, what the others took).

    On a machine with fewer free cores than processes, the wall-clock time can be no
    shorter than the sum of their CPU time over the cores: that, not any one process,
    is then the limit. With a free core for each, it can be no shorter than the CPU time
    of the busiest process (each runs one event loop): that one is the single limit.
    `controller`: the names of the controller's processes among `processes`."""

    def __init__(self, processes: dict[str, int], controller: Sequence[str] = ()) -> None:
        self.processes = processes
        self.controller = tuple(controller)
        self.cores = os.cpu_count() or 1
        self._start = self._now()
        self.at: dict[str, dict[str, float]] = {}

    def _now(self) -> dict[str, float]:
        now = {name: cpu_seconds(pid) for name, pid in self.processes.items()}
        now["(wall)"] = time.perf_counter()
        now["(machine busy)"] = _machine_busy()
        return now

    def restart(self) -> None:
        """Count from now on."""
        self._start = self._now()

    def sample(self, when: str) -> None:
        now = self._now()
        self.at[when] = {name: now[name] - self._start[name] for name in now}


def controller_names(layout: Sequence[str]) -> tuple[str, ...]:
    """How the report names the controller's processes: "controller" when it is one."""
    if len(layout) == 1:
        return ("controller",)
    return tuple(f"controller ({components})" for components in layout)


def busiest_process(seconds: dict[str, float], processes: Iterable[str]) -> tuple[str, float]:
    """The one of `processes` that used the most CPU `seconds`, and how many: on enough
    free cores, the run takes at least that long, however fast the others are."""
    name = max(processes, key=lambda process: seconds[process])
    return name, seconds[name]


def _machine_busy() -> float:
    """CPU seconds all cores have spent on anything but idling since boot (/proc/stat)."""
    values = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = values[3] + values[4]  # idle, iowait
    return (sum(values) - idle) / os.sysconf("SC_CLK_TCK")


async def main(args: argparse.Namespace) -> None:
    jobs, pods = args.jobs, args.jobs * args.pods_per_job
    nodes = -(-pods // args.pods_per_node)
    async with DevelopmentBroker() as broker:
        settings = kafka_settings(broker.bootstrap_servers, args.partitions)
        await ensure_topics(settings)
        async with (
            simulator_process(
                nodes=nodes,
                pods_per_node=args.pods_per_node,
                time_scale=args.time_scale,
                history=max(100_000, 10 * (pods + jobs)),
            ) as cluster,
            projections_process(broker.bootstrap_servers) as (projections, projections_pid),
        ):
            say(f"cluster {cluster.url} ({nodes} nodes), broker {broker.bootstrap_servers}")
            async with connect(str(cluster.kubeconfig)) as kube:
                await kube.request(
                    "POST", "/api/v1/namespaces", body={"metadata": {"name": NAMESPACE}}
                )
                layout = LAYOUTS[args.processes]
                async with controller_processes(
                    bootstrap=broker.bootstrap_servers,
                    kubeconfig=cluster.kubeconfig,
                    partitions=args.partitions,
                    qps=args.qps,
                    burst=args.burst,
                    layout=layout,
                    lease=LeaseTiming().duration,  # `lavalog run`'s
                ) as controller:
                    say(
                        f"controller ready ({' | '.join(layout)}; qps={args.qps:g}, "
                        f"burst={args.burst}); submitting"
                    )
                    memory = Memory(controller)
                    assert broker.pid is not None
                    named = controller_names(layout)
                    cpu = Cpu(
                        {
                            **{
                                name: child.pid
                                for name, child in zip(named, controller, strict=True)
                            },
                            "simulated cluster": cluster.pid,
                            "broker": broker.pid,
                            "projections": projections_pid,
                            "this benchmark": os.getpid(),
                        },
                        controller=named,
                    )
                    version_before = await resource_version(kube)
                    before, refused_before = await api_calls(kube)
                    own: Counter[str] = Counter()
                    progress = Progress(jobs, pods, on_goal=_sample_at(memory, cpu))
                    times, timeline = await submit_jobs(
                        kube, args, own, progress, [c.metrics for c in controller], every=args.every
                    )
                    memory.sample("end")
                    calls, refused = await api_calls(kube)
                    calls, refused = calls - before - own, refused - refused_before
                    reasons = await job_event_reasons(kube)
                    writes = await resource_version(kube) - version_before
                    # each term after the first: the leader stepped down and listed anew
                    # the first process runs the watchers, in either layout
                    terms = await metric(controller[0].metrics, "lavalog_watchers_terms")
                    step_downs = int(terms) - 1
                    lag, catching_up = await caught_up(projections, within=300)
                held, state_bytes = await decider_state(settings, args.partitions)
                decided = await running_decided(settings, args.partitions)
                logged = await messages(settings, args.partitions)
                say(f"controller stopped; creating {pods:,} bare pods (baseline)")
                baseline_cpu = Cpu(
                    {"simulated cluster": cluster.pid, "this benchmark": os.getpid()}
                )
                raw = await create_bare_pods(kube, pods)
                baseline_cpu.sample("pods")
    floor, floor_cpu = await cluster_floor(args, nodes)
    report(args, times, (raw, floor), calls, memory, (held, state_bytes), (lag, catching_up))
    report_phases(progress, decided, timeline)
    report_status_writes(args, progress.status_writes)
    report_events(args, reasons, refused)
    report_cpu(args, cpu, (baseline_cpu, floor_cpu), step_downs)
    report_work(args, writes, logged)


async def cluster_floor(args: argparse.Namespace, nodes: int) -> tuple[float, Cpu]:
    """The same Jobs on a new simulated cluster of the same nodes, their PodGroups and pods
    made by this benchmark (`cluster_floor`): seconds until every pod exists, and the CPU."""
    say(f"the cluster's floor: {args.jobs:,} Jobs, their PodGroups and pods made directly")
    pods = args.jobs * args.pods_per_job
    async with (
        simulator_process(
            nodes=nodes,
            pods_per_node=args.pods_per_node,
            time_scale=args.time_scale,
            history=max(100_000, 10 * (pods + args.jobs)),
        ) as cluster,
        connect(str(cluster.kubeconfig)) as kube,
    ):
        cpu = Cpu({"simulated cluster": cluster.pid, "this benchmark": os.getpid()})
        jobs = [
            job(index, args.pods_per_job, args.finish, FLOOR_NAMESPACE)
            for index in range(args.jobs)
        ]
        seconds = await make_gangs(kube, FLOOR_NAMESPACE, jobs, CONCURRENCY, cpu.restart)
        cpu.sample("pods")
    return seconds, cpu


def _sample_at(memory: Memory, cpu: Cpu) -> Callable[[str], None]:
    """Sample the CPU time when every pod exists, every Job is Running, and Completed; the
    controller's memory at the last two."""

    def sample(goal: str) -> None:
        if goal in ("pods", "running", "completed"):
            cpu.sample(goal)
        if goal in ("running", "completed"):
            memory.sample(goal)

    return sample


def report(
    args: argparse.Namespace,
    times: dict[str, float],
    baselines: tuple[float, float],
    calls: Counter[str],
    memory: Memory,
    state: tuple[int, float],
    lag: tuple[int, float | None],
) -> None:
    jobs, pods = args.jobs, args.jobs * args.pods_per_job
    raw, floor = baselines
    shape = f"{jobs:,} x {args.pods_per_job}"
    rows = [
        ["all Jobs submitted (32 in flight)", "submitted", jobs],
        ["all pods created", "pods", pods],
        ["all Jobs Running", "running", jobs],
        ["all Jobs Completed", "completed", jobs],
    ]
    table(
        [f"scale, {shape}", "objects", "seconds", "per second"],
        [
            [what, f"{count:,}", f"{times[key]:.1f}", f"{count / times[key]:,.0f}"]
            for what, key, count in rows
            if key in times
        ]
        + [
            [
                "baseline: bare pod creates, same simulator",
                f"{pods:,}",
                f"{raw:.1f}",
                f"{pods / raw:,.0f}",
            ],
            [
                "the cluster's floor: Jobs, PodGroups, pods made directly, new simulator",
                f"{pods:,}",
                f"{floor:.1f}",
                f"{pods / floor:,.0f}",
            ],
            [
                "reference: Volcano, real cluster, 10,000 x 1 (published)",
                "10,000",
                "180-250",
                "40-56",
            ],
        ],
    )
    ratio = times["pods"] / raw
    say(
        f"\nall pods in {ratio:.1f}x the bare-pod time (target <= 3x: "
        f"{'met' if ratio <= 3 else 'not met'}; 10,000 x 1 also < 15 s)"
        f"\nthe cluster's floor is {floor / raw:.1f}x the bare-pod time: no controller's run of "
        f"this shape is quicker on this cluster; this run took {times['pods'] / floor:.1f}x it"
    )
    table(
        [
            f"API calls until every Job is {'Running' if args.finish is None else 'Completed'}",
            "per job",
            "per pod",
            "Volcano per job",
            "per pod",
        ],
        [
            [
                name,
                f"{count / jobs:.2f}",
                f"{count / pods:.2f}",
                *VOLCANO_CALLS.get(name, ("-", "-")),
            ]
            for name, count in sorted(calls.items(), key=lambda kv: -kv[1])
        ]
        + [
            [name, "0", "0", *volcano]
            for name, volcano in VOLCANO_CALLS.items()
            if name not in calls
        ]
        + [["total", f"{calls.total() / jobs:.2f}", f"{calls.total() / pods:.2f}", "", ""]],
    )
    budget = 3 * jobs + pods
    # the leader renews its Lease every few seconds however many jobs there are
    lease = sum(count for name, count in calls.items() if name.endswith(" leases"))
    for_jobs = calls.total() - lease
    met = "met" if for_jobs <= budget else "not met"
    say(
        f"\n{for_jobs:,} calls for the jobs (and {lease:,} of the leader's Lease) against a "
        f"target of 3 per job + 1 per pod = {budget:,}: {met}"
    )
    held, state_bytes = state
    grown = max(memory.peak - memory.idle, 0)
    table(
        ["controller memory", "MB", "MB per 1,000 jobs"],
        [["resident, idle before the jobs", f"{memory.idle / MB:,.0f}", "-"]]
        + [
            [
                f"resident, all Jobs {when.title()}" if when != "end" else "resident, at the end",
                f"{value / MB:,.0f}",
                f"{(value - memory.idle) / MB / jobs * 1000:,.1f}",
            ]
            for when, value in memory.at.items()
        ]
        + [
            [
                "peak resident (VmHWM)",
                f"{memory.peak / MB:,.0f}",
                f"{grown / MB / jobs * 1000:,.1f}",
            ]
        ],
    )
    behind, seconds = lag
    say(
        f"\ndecider state: {held:,} jobs in its snapshot, {state_bytes:,.0f} bytes per job encoded"
        f"\nprojections: {behind:,} messages behind when the run ended, "
        + (f"caught up {seconds:.1f} s later" if seconds is not None else "not caught up in 300 s")
    )


def report_phases(
    progress: Progress, decided: dict[str, float], timeline: list[tuple[float, dict[str, int]]]
) -> None:
    """When the Jobs reached Running: the first, and from each one's submission the median
    and the last; the hops of its way from its last pod Running to its Running status
    (watched, published and decided; then carried out); and the timeline, which says where
    the pods waited (created, not bound: the gang scheduler; bound, not Running: the
    kubelets; all Running, the Job not: the controller)."""
    if progress.running_at:
        first = min(progress.running_at.values()) - progress.started
        say(f"\nJobs Running: the first {first:.1f} s after the first submission")
        hops = [
            ("submitted -> Running", progress.submitted_at, progress.running_at),
            ("its pods all Running -> Running decided", progress.pods_started_at, decided),
            ("Running decided -> written", decided, progress.running_at),
        ]
        table(
            ["per Job, seconds", "median", "p90", "max"],
            [
                [what, *(f"{seconds[int(len(seconds) * q)]:.1f}" for q in (0.5, 0.9)),
                 f"{seconds[-1]:.1f}"]
                for what, start, end in hops
                if (seconds := progress.since(start, end))
            ],
        )  # fmt: skip
    if not timeline:
        return
    names = list(timeline[0][1])
    table(
        ["s", *names],
        [[f"{at:.0f}", *(f"{row.get(n, 0):,}" for n in names)] for at, row in timeline],
    )


def report_status_writes(args: argparse.Namespace, writes: Counter[str]) -> None:
    """The status writes per job by the phase each wrote: what above one per phase the
    writes of a phase cost (the decider decides one per step of the way: initiated, pods
    created, each pod started)."""
    phases = ", ".join(f"{phase} {n / args.jobs:.2f}" for phase, n in writes.most_common())
    say(f"\nstatus writes per job by the phase written (the Jobs' watch): {phases}")


def report_events(args: argparse.Namespace, reasons: Counter[str], refused: Counter[str]) -> None:
    """The calls the API server refused (a 409 Conflict: a write made again), and the
    Events on the Jobs by reason (Volcano's job controller writes none on the way to
    Running unless a PodGroup is reported Unschedulable: `PodGroupPending`)."""
    say(
        "\ncalls refused: "
        + (
            ", ".join(f"{call} x{count:,}" for call, count in sorted(refused.items()))
            if refused
            else "none"
        )
    )
    if not reasons:
        say("no Events on the Jobs")
        return
    table(
        ["Events on the Jobs (type reason)", "count", "per job"],
        [
            [reason, f"{count:,}", f"{count / args.jobs:.2f}"]
            for reason, count in sorted(reasons.items(), key=lambda kv: -kv[1])
        ],
    )


def report_cpu(
    args: argparse.Namespace, cpu: Cpu, baselines: tuple[Cpu, Cpu], step_downs: int
) -> None:
    """CPU seconds per process from the first submission until each goal, beside the cores'
    capacity over the same wall time and what the whole machine was busy with."""
    jobs = args.jobs
    goals = [when for when in ("pods", "running", "completed") if when in cpu.at]
    names = [*cpu.processes, "(all of the run)", "(machine busy)", "(wall)"]
    rows = []
    for name in names:
        row = [name]
        for when in goals:
            seconds = cpu.at[when]
            value = (
                sum(seconds[p] for p in cpu.processes)
                if name == "(all of the run)"
                else seconds[name]
            )
            row += [f"{value:,.1f}", f"{value / jobs * 1000:,.2f}"]
        rows.append(row)
    header = ["CPU seconds from the first submission"]
    for when in goals:
        header += [f"until all {'pods' if when == 'pods' else when.title()}", "ms/job"]
    table(header, rows)
    pods = cpu.at["pods"]
    floor = sum(pods[p] for p in cpu.processes) / cpu.cores
    # what the rest of the rig alone asks of these cores: the time no controller beats here
    rig = sum(pods[p] for p in cpu.processes if p not in cpu.controller) / cpu.cores
    busiest, alone = busiest_process(pods, cpu.processes)
    split = ""
    if len(cpu.controller) > 1:
        controller, controller_alone = busiest_process(pods, cpu.controller)
        split = f" (the controller's busiest: the {controller}, {controller_alone:.1f} s)"
    bare, cluster_floor = (baseline.at["pods"] for baseline in baselines)
    say(
        f"\nall pods: {pods['(wall)']:.1f} s of wall time; the run's processes used "
        f"{floor * cpu.cores:,.1f} CPU s, at least {floor:.1f} s on {cpu.cores} cores; the "
        f"machine was busy {pods['(machine busy)']:,.1f} of {pods['(wall)'] * cpu.cores:,.1f} "
        f"core-seconds (the rest of the busy time is other work on the machine)"
        f"\nwithout the controller's own CPU, the rest of the run (simulated cluster, broker, "
        f"projections, this benchmark) would still take at least {rig:.1f} s on {cpu.cores} cores"
        f"\nwith a free core for each process, at least {alone:.1f} s: the CPU of the busiest "
        f"process, the {busiest}{split}"
        f"\nbaseline: {bare['(wall)']:.1f} s, the simulated cluster "
        f"{bare['simulated cluster']:.1f} CPU s, this benchmark {bare['this benchmark']:.1f}"
        f"\nthe cluster's floor: {cluster_floor['(wall)']:.1f} s, the simulated cluster "
        f"{cluster_floor['simulated cluster']:.1f} CPU s, this benchmark "
        f"{cluster_floor['this benchmark']:.1f}"
        f"\nleader step-downs during the run (each followed by a full list): {step_downs}"
    )


def report_work(args: argparse.Namespace, writes: int, logged: dict[str, int]) -> None:
    """What one Job costs the API server and the log, beside one bare pod's single write."""
    jobs, pods = args.jobs, args.jobs * args.pods_per_job
    say(
        f"\nAPI server writes (resourceVersions) until the last goal: {writes / jobs:.1f} per job, "
        f"{writes / pods:.1f} per pod (a bare pod: 1)"
        f"\nlog: {logged[OBSERVED] / jobs:.1f} observations and {logged[DECISIONS] / jobs:.1f} "
        "decisions per job"
    )


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument(
        "--pods-per-job", type=int, default=1, help="10: Volcano's 100,000-pod design scale"
    )
    parser.add_argument(
        "--finish",
        type=float,
        metavar="S",
        help="pods run S simulated seconds; wait until every Job is Completed too",
    )
    parser.add_argument("--qps", type=float, default=5_000.0, help="actuator API calls/s")
    parser.add_argument("--burst", type=int, default=10_000, help="actuator token bucket size")
    parser.add_argument("--partitions", type=int, default=12, help="observed and decisions")
    parser.add_argument(
        "--every", type=float, default=10.0, metavar="S", help="seconds between timeline rows"
    )
    parser.add_argument("--pods-per-node", type=int, default=250)
    parser.add_argument(
        "--processes",
        choices=tuple(LAYOUTS),
        default="one",
        help="the controller's components in one process (as `lavalog run`) or one each",
    )
    parser.add_argument(
        "--time-scale", type=float, default=10.0, help="simulated s per real s (pod start: 1 s)"
    )
    return parser.parse_args()


if __name__ == "__main__":
    run_benchmark(main(parse()))
