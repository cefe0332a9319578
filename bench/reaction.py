"""Reaction: from a pod failing to its replacement pod existing, under background load.

    python bench/reaction.py [--failures 200] [--jobs 20] [--replicas 10] [--rate 1000]
                             [--background-jobs 100] [--rounds 2] [--arm LABEL:KEY=VALUE,...]

`--jobs` Volcano Jobs of `--replicas` pods (`PodFailed -> RestartPod`, no timeout) run in
a simulated cluster in this process; the controller runs in its own process, as in a
deployment, with the development broker. Beside them run `--background-jobs` Jobs of a ps
and three workers (`PodFailed -> RestartTask` on the workers), and their running workers
are crashed at a fixed pace, calibrated at the start so that the watchers publish
`--rate` observations/s in all, the timed crashes' among them (the topic's end offsets
count them): each crash is a real failure to the controller, which
watches it, decides it, deletes and creates the task's pods again and writes the Job's
status and Events, the API calls it made printed per second by verb. Meanwhile one
running pod of the timed Jobs after another is crashed (`kubelet.crash`, exit 1) and
the time until a pod of its name is ADDED again is read from the store's listener. The
replacement takes one trip through the controller: the failure is decided into a
PodsReplace, which the actuator carries out as delete, then create once the pod is gone
(a restart that has to wait for running pods takes two: PodsKill, then the deletion is
watched and decided into a PodsCreate; those steps are shown when they occur). Where the
time goes is read back from the topics afterwards: when the watcher saw each change (the
observation's time), when it was published and when each decision was produced (the
Kafka message timestamps, in ms). Target (docs/benchmarks.md): p99 < 50 ms at 1,000
observations/s.

Each `--arm` is a setting of the controller (its event loop, its components in one process
or one each, another commit's code, its fetch wait), measured beside the others in the same
run: after a warm-up turn that calibrates the load and measures nothing, the arms take
turns `--rounds` times (every other round in the other order), each turn a fresh
controller on a fresh broker (it adopts the running Jobs) with `--failures / --rounds`
crashes, so that a change in the machine's load falls on all of them. A turn
starts once its controller has caught up with the backlog its start and the load left
(the decider's lag at most a tenth of a second's load, the decisions queued in the
actuator's lanes, status writes held for the next of their job among them, at most a
second's); one that has not within 30 s is skipped, and so is the rest of a turn whose
replacement is not made within 30 s (its controller is behind its load): the arm's count
of such turns says so.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import functools
import itertools
import math
import operator
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiokafka import TopicPartition

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.crash_pace import CrashPace
from bench.harness import (
    ALL_COMPONENTS,
    LAYOUTS,
    ROOT,
    ControllerChild,
    controller_processes,
    cpu_seconds,
    kafka_settings,
    metric,
    metric_series,
    run_benchmark,
    say,
    table,
    until,
)
from lavalog.controller.broker import DevelopmentBroker
from lavalog.controller.collector import collect_rarely
from lavalog.controller.kafka import KafkaSettings, create_consumer, topic_name
from lavalog.controller.kube import Kube, connect
from lavalog.events.codec import decode_decision, decode_observation
from lavalog.events.decisions import PodsCreate, PodsKill, PodsReplace
from lavalog.events.observations import PodDeleted, PodObserved
from lavalog.events.topics import DECISIONS, OBSERVED
from lavalog.simulator import registry
from lavalog.simulator.server import SimulatedCluster
from lavalog.simulator.store import Change

JOBS_PATH = "/apis/batch.volcano.sh/v1alpha1/namespaces/default/jobs"


def job(name: str, tasks: list[tuple[str, int, str | None]], *, namespace: str) -> dict[str, Any]:
    """A Job of `tasks` (name, replicas, the action on PodFailed or None) whose pods run
    until they are crashed, gang-scheduled as a whole."""
    container = {
        "name": "main",
        "image": "busybox",
        "command": ["sh", "-c", "sleep infinity"],
        "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}},
    }
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "minAvailable": sum(replicas for _, replicas, _ in tasks),
            "maxRetry": 100_000,
            "schedulerName": "volcano",
            "tasks": [
                {
                    "name": task,
                    "replicas": replicas,
                    "policies": [{"event": "PodFailed", "action": action}] if action else [],
                    "template": {"spec": {"restartPolicy": "Never", "containers": [container]}},
                }
                for task, replicas, action in tasks
            ],
        },
    }


def reaction_job(index: int, replicas: int) -> dict[str, Any]:
    """A Job whose crashed pods are timed: each is replaced alone (RestartPod)."""
    return job(f"react-{index}", [("main", replicas, "RestartPod")], namespace="default")


#: the background's namespace, and its Jobs' shape: a ps and three workers, a failed
#: worker restarting its task (as `bench/decider.py`'s lifecycles)
BACKGROUND = "background"
BACKGROUND_TASKS: list[tuple[str, int, str | None]] = [
    ("ps", 1, None),
    ("worker", 3, "RestartTask"),
]


@dataclass
class Failure:
    pod: str
    crashed: float
    #: wall-clock times of what the store saw happen to the pod after the crash
    seen: dict[str, float] = field(default_factory=dict)
    replaced: asyncio.Future[float] = field(default_factory=asyncio.Future)


class PodEvents:
    """The store listener: running pods, and the milestones of the failure under way."""

    def __init__(self) -> None:
        self.running: set[str] = set()
        self.current: Failure | None = None
        #: called with the pod when the failure under way is seen Failed (the baseline)
        self.on_failed: Callable[[dict[str, Any]], None] | None = None

    def __call__(self, change: Change) -> None:
        if change.resource is not registry.POD:
            return
        name = change.entry.obj["metadata"]["name"]
        phase = change.entry.obj.get("status", {}).get("phase")
        if phase == "Running" and change.type != "DELETED":
            self.running.add(name)
        else:
            self.running.discard(name)
        failure = self.current
        if failure is None or failure.pod != name:
            return
        now = time.time()
        if change.type == "ADDED":
            failure.seen.setdefault("added", now)
            if not failure.replaced.done():
                failure.replaced.set_result(now)
        elif change.type == "DELETED":
            failure.seen.setdefault("deleted", now)
        elif phase == "Failed" and "failed" not in failure.seen:
            failure.seen["failed"] = now
            if self.on_failed is not None:
                self.on_failed(change.entry.obj)


class Published:
    """Observations the watchers have published so far: the end offsets of
    `lavalog.observed`, summed over its partitions."""

    def __init__(self, settings: KafkaSettings) -> None:
        self._consumer = create_consumer(settings, group_id=None)
        name = topic_name(settings, OBSERVED)
        self._partitions = [TopicPartition(name, p) for p in range(settings.observed_partitions)]

    async def __aenter__(self) -> Published:
        await self._consumer.start()
        return self

    async def __aexit__(self, *_: object) -> None:
        await self._consumer.stop()

    async def count(self) -> int:
        return sum((await self._consumer.end_offsets(self._partitions)).values())


class BackgroundCrashes:
    """The background load: running workers of the background Jobs crashed (exit 1) at a
    fixed pace, calibrated at the run's start to have the watchers publish `rate`
    observations/s with the timed crashes' (`CrashPace`, from the topic's end offsets).
    Each crash is what a real failure is to the controller: the worker Failed, its task's
    pods deleted and created again (RestartTask), pending and running, each step an
    observation, with the status writes and Events the controller makes for them."""

    def __init__(self, rate: int, events: PodEvents, cluster: SimulatedCluster) -> None:
        self.pace = CrashPace(rate)
        self.events = events
        self.cluster = cluster
        self.crashes = 0
        self._random = random.Random(1)

    async def run(self, published: Published) -> None:
        """Crash in ticks of 10 ms until cancelled, reading the published count every
        0.2 s until the pace is calibrated."""
        read_at = time.perf_counter()
        self.pace.start_turn(read_at)
        while True:
            now = time.perf_counter()
            if not self.pace.calibrated and now - read_at >= 0.2:
                self.pace.measured(now, self.crashes, await published.count())
                read_at = now
                if self.pace.calibrated:
                    say(
                        f"background load calibrated: {self.pace.per_crash:.1f} observations "
                        f"per crash, so {self.pace.background_rate / self.pace.per_crash:.0f} "
                        "crashes/s"
                    )
            running = [
                pod for pod in self.events.running if pod.startswith("bg-") and "-worker-" in pod
            ]
            for pod in self._random.sample(running, min(len(running), self.pace.due(now))):
                self.cluster.kubelet.crash(BACKGROUND, pod, 1)
                self.crashes += 1
            await asyncio.sleep(0.01)


#: seconds a replacement is waited for; a turn whose replacement takes longer ends there
#: (its controller is behind its load, and would only fall further behind)
PATIENCE = 30.0


class Behind(Exception):
    """A replacement not made within `PATIENCE`: the failures replaced before it."""

    def __init__(self, failures: list[Failure]) -> None:
        super().__init__(f"a replacement not made within {PATIENCE:.0f} s")
        self.failures = failures


async def inject(
    events: PodEvents, pods: list[str], count: int, cluster: SimulatedCluster
) -> list[Failure]:
    """Crash `count` pods one at a time, round-robin, each once its previous one is
    replaced; `Behind` when one is not replaced within `PATIENCE`."""
    failures: list[Failure] = []
    for number, pod in zip(range(count), itertools.cycle(pods), strict=False):
        await until(functools.partial(events.running.__contains__, pod))
        failure = events.current = Failure(pod, time.time())
        cluster.kubelet.crash("default", pod, 1)
        try:
            await asyncio.wait_for(failure.replaced, timeout=PATIENCE)
        except TimeoutError:
            events.current = None
            raise Behind(failures) from None
        failures.append(failure)
        if (number + 1) % 50 == 0:
            latest = sorted(1000 * (f.replaced.result() - f.crashed) for f in failures)
            say(f"  {number + 1:>5} failures, p50 so far {statistics.median(latest):.1f} ms")
        await asyncio.sleep(0.02)
    events.current = None
    return failures


async def replace_directly(kube: Kube, failed: dict[str, Any]) -> None:
    """What a replacement costs with no controller: delete the pod, create it again."""
    meta = failed["metadata"]
    path = f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}"
    await kube.request("DELETE", path, body={"preconditions": {"uid": meta["uid"]}})
    keep = ("name", "namespace", "labels", "annotations", "ownerReferences")
    spec = {k: v for k, v in failed["spec"].items() if k != "nodeName"}
    pod = {"metadata": {k: meta[k] for k in keep if k in meta}, "spec": spec}
    await kube.request("POST", f"/api/v1/namespaces/{meta['namespace']}/pods", body=pod)


async def baseline(
    events: PodEvents, pods: list[str], count: int, cluster: SimulatedCluster, kube: Kube
) -> list[Failure]:
    """The same crashes with the controller stopped, each pod replaced by `replace_directly`
    as soon as this process sees it Failed in the store: the simulated cluster's floor."""
    replacements: set[asyncio.Task[None]] = set()

    def replace(failed: dict[str, Any]) -> None:
        task = asyncio.create_task(replace_directly(kube, failed))
        replacements.add(task)
        task.add_done_callback(replacements.discard)

    events.on_failed = replace
    try:
        return await inject(events, pods, count, cluster)
    finally:
        events.on_failed = None


async def read_topics(settings: KafkaSettings) -> list[tuple[int, Any]]:
    """(timestamp ms, event) of every reaction-job message in both topics."""
    consumer = create_consumer(settings, group_id=None, max_poll_records=10_000)
    consumer.subscribe([topic_name(settings, OBSERVED), topic_name(settings, DECISIONS)])
    await consumer.start()
    found: list[tuple[int, Any]] = []
    try:
        while batches := await consumer.getmany(timeout_ms=1_000):
            for tp, messages in batches.items():
                decode = decode_decision if tp.topic.endswith(DECISIONS) else decode_observation
                for message in messages:
                    if message.key.startswith(b"default/react-"):
                        found.append((message.timestamp, decode(message.value)))
    finally:
        await consumer.stop()
    return found


def milestones(failures: list[Failure], log: list[tuple[int, Any]]) -> dict[str, list[float]]:
    """Milliseconds from each crash to each step of its reaction."""
    by_pod: dict[str, list[tuple[int, Any]]] = {}
    for timestamp, event in log:
        names = (
            [event.pod]
            if isinstance(event, PodObserved | PodDeleted)
            else [ref.name for ref in event.pods]
            if isinstance(event, PodsKill | PodsCreate | PodsReplace)
            else []
        )
        for name in names:
            by_pod.setdefault(name, []).append((timestamp, event))
    steps: dict[str, list[float]] = {}

    def add(step: str, at: float | None, failure: Failure) -> None:
        if at is not None:
            steps.setdefault(step, []).append(1000 * (at - failure.crashed))

    for failure in failures:
        after = [
            (ts / 1000, e)
            for ts, e in by_pod.get(failure.pod, [])
            if ts / 1000 >= failure.crashed - 0.002
        ]
        failed = _first(after, lambda e: isinstance(e, PodObserved) and e.phase == "Failed")
        deleted = _first(after, lambda e: isinstance(e, PodDeleted))
        add("kubelet writes the pod Failed", failure.seen.get("failed"), failure)
        add("  watcher receives it", failed and failed[1].time, failure)
        add("  published (the failure)", failed and failed[0], failure)
        add("  PodsReplace produced", _time(after, PodsReplace), failure)
        add("  PodsKill produced", _time(after, PodsKill), failure)
        add("pod deleted (actuator)", failure.seen.get("deleted"), failure)
        add("  watcher receives the deletion", deleted and deleted[1].time, failure)
        add("  published (the deletion)", deleted and deleted[0], failure)
        add("  PodsCreate produced", _time(after, PodsCreate), failure)
        add("replacement pod ADDED (actuator)", failure.replaced.result(), failure)
        if "failed" in failure.seen:  # the controller's part: this process's crash left out
            added = failure.replaced.result() - failure.seen["failed"]
            steps.setdefault("  ADDED after the Failed write", []).append(1000 * added)
    return steps


def _first(events: list[tuple[float, Any]], match: Any) -> tuple[float, Any] | None:
    return next(((ts, e) for ts, e in events if match(e)), None)


def _time(events: list[tuple[float, Any]], kind: type) -> float | None:
    found = _first(events, lambda e: isinstance(e, kind))
    return None if found is None else found[0]


def percentile(values: list[float], share: float) -> float:
    """The value at `share` of the sorted `values` (NaN for none: an arm behind at once)."""
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


@dataclass(frozen=True)
class Arm:
    """One setting of the controller, measured against the others in the same run."""

    label: str
    event_loop: str = "auto"
    #: one process for every component, or one process each
    layout: tuple[str, ...] = (ALL_COMPONENTS,)
    #: a git commit to run instead of this checkout (before/after a change)
    code: str | None = None
    #: the consumers' `fetch_max_wait_ms` (tansu answers a fetch only when it runs out)
    fetch_wait: int | None = None

    @classmethod
    def parse(cls, spec: str) -> Arm:
        """`LABEL:key=value,...` with keys loop (auto, asyncio, uvloop), processes (one,
        components), code (a git commit) and fetch-wait (ms)."""
        label, _, settings = spec.partition(":")
        arm = cls(label)
        for setting in filter(None, settings.split(",")):
            key, _, value = setting.partition("=")
            if key == "loop" and value in ("auto", "asyncio", "uvloop"):
                arm = dataclasses.replace(arm, event_loop=value)
            elif key == "processes" and value in LAYOUTS:
                arm = dataclasses.replace(arm, layout=LAYOUTS[value])
            elif key == "code" and value:
                arm = dataclasses.replace(arm, code=value)
            elif key == "fetch-wait" and value.isdigit() and int(value) > 0:
                arm = dataclasses.replace(arm, fetch_wait=int(value))
            else:
                raise argparse.ArgumentTypeError(
                    f"{setting!r}: choose loop=auto|asyncio|uvloop, "
                    f"processes={'|'.join(LAYOUTS)}, code=COMMIT or fetch-wait=MS"
                )
        return arm


@dataclass
class Readings:
    """What a turn is measured by, read at its start and at its end (their difference)."""

    seconds: float
    #: observations the watchers published
    published: int
    #: observations the controller's decider decided
    decided: float
    #: the controller processes' CPU time
    cpu_seconds: float
    #: this process's: the simulated cluster's, the crashes' and the clocks'
    cluster_cpu_seconds: float
    broker_cpu_seconds: float
    #: API calls the controller made (the requests the simulated API server served)
    calls: Counter[str]

    @classmethod
    async def read(
        cls,
        published: Published,
        decider: str,
        children: list[ControllerChild],
        cluster: SimulatedCluster,
        broker: DevelopmentBroker,
    ) -> Readings:
        assert broker.pid is not None
        return cls(
            seconds=time.perf_counter(),
            published=await published.count(),
            decided=await metric(decider, "lavalog_decider_observations"),
            cpu_seconds=sum(child.cpu_seconds() for child in children),
            cluster_cpu_seconds=time.process_time(),
            broker_cpu_seconds=cpu_seconds(broker.pid),
            calls=Counter(cluster.api_calls),
        )

    @classmethod
    def nothing(cls) -> Readings:
        """What no turn has added up to yet."""
        return cls(0.0, 0, 0.0, 0.0, 0.0, 0.0, Counter())

    def __sub__(self, before: Readings) -> Readings:
        return self._combine(before, operator.sub)

    def __add__(self, other: Readings) -> Readings:
        return self._combine(other, operator.add)

    def _combine(self, other: Readings, how: Callable[[Any, Any], Any]) -> Readings:
        return Readings(
            *(how(getattr(self, f.name), getattr(other, f.name)) for f in dataclasses.fields(self))
        )

    def summary(self) -> str:
        """The rate published and decided, and the CPU each process spent per observation
        decided."""
        per = 1e6 / max(self.decided, 1)
        return (
            f"{self.published / self.seconds:,.0f} observations/s published, "
            f"{self.decided / self.seconds:,.0f}/s decided by the controller over "
            f"{self.seconds:.1f} s; CPU per observation decided: controller "
            f"{self.cpu_seconds * per:,.0f} µs, simulated cluster and benchmark "
            f"{self.cluster_cpu_seconds * per:,.0f} µs, broker "
            f"{self.broker_cpu_seconds * per:,.0f} µs"
        )


@dataclass
class Measured:
    """An arm's turns added up."""

    failures: list[Failure] = field(default_factory=list)
    spent: Readings = field(default_factory=Readings.nothing)
    #: turns skipped (not caught up within `PATIENCE`) or ended by a replacement not made
    #: within it
    behind: int = 0

    def add(self, turn: Readings, failures: list[Failure]) -> None:
        self.failures += failures
        self.spent += turn


@contextlib.contextmanager
def checkout(commit: str | None) -> Iterator[Path]:
    """This checkout, or `commit`'s files in a temporary directory."""
    if commit is None:
        yield ROOT
        return
    with tempfile.TemporaryDirectory(prefix="lavalog-reaction-") as tmp:
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", commit], check=True, capture_output=True
        )
        subprocess.run(["tar", "-x", "-C", tmp], input=archive.stdout, check=True)
        yield Path(tmp)


async def caught_up(
    decider: str, actuator: str, *, behind: int, queued: int
) -> tuple[float, float] | None:
    """None once the turn's controller has caught up, within `PATIENCE`, with what the
    turn before left and the load brings (a backlog of observations and of decisions): at
    most `behind` observations not decided and `queued` decisions in the actuator's lanes
    (status writes held there for the next of their job among them; not its Events,
    written off the lanes: no replacement waits for them); else the last (observations,
    decisions) behind. A turn that starts behind would measure a backlog, not its own
    setting."""
    deadline = time.monotonic() + PATIENCE
    while True:
        lag = sum(await metric_series(decider, "lavalog_decider_lag"))  # every partition
        backlog = await metric(actuator, "lavalog_actuator_queued")
        if lag <= behind and backlog <= queued:
            return None
        if time.monotonic() >= deadline:
            return lag, backlog
        await asyncio.sleep(0.5)


async def main(args: argparse.Namespace) -> None:
    collect_rarely()  # this process hosts the simulated cluster: as `lavalog sim` does
    events = PodEvents()
    arms: list[Arm] = args.arm or DEFAULT_ARMS
    measured = {arm.label: Measured() for arm in arms}
    log: list[tuple[int, Any]] = []
    async with (
        SimulatedCluster(nodes=4, node_capacity=CAPACITY, time_scale=args.time_scale) as cluster,
        contextlib.AsyncExitStack() as sources,
    ):
        code = {arm.label: sources.enter_context(checkout(arm.code)) for arm in arms}
        cluster.objects.store.subscribe(events)
        run = Run(
            args,
            cluster,
            events,
            BackgroundCrashes(args.rate, events, cluster),
            pods=[f"react-{j}-main-{i}" for i in range(args.replicas) for j in range(args.jobs)],
            per_turn=-(-args.failures // args.rounds),
        )
        async with connect(str(cluster.kubeconfig_path)) as kube:
            await kube.request(
                "POST", "/api/v1/namespaces", body={"metadata": {"name": BACKGROUND}}
            )
            say(f"warm-up: {arms[0].label}'s controller, the load calibrated, nothing measured")
            await run.turn(arms[0], code[arms[0].label], kube, None)
            for number, arm in turns(arms, args.rounds):
                say(f"{arm.label} (round {number + 1} of {args.rounds})")
                log += await run.turn(arm, code[arm.label], kube, measured[arm.label])
            say("controller stopped; the same crashes, each pod replaced directly (baseline)")
            direct = await baseline(events, run.pods, run.per_turn * args.rounds, cluster, kube)
    report(arms, measured, direct, log)


def turns(arms: list[Arm], rounds: int) -> Iterator[tuple[int, Arm]]:
    """(round, arm) in the order the turns are taken: every other round the other way
    round (A B, B A, A B...), since where a turn comes in its round moves its figures
    (the first of two arms measured 1.5-2.5 ms slower at the median, either arm)."""
    for number in range(rounds):
        for arm in arms if number % 2 == 0 else arms[::-1]:
            yield number, arm


@dataclass
class Run:
    """What the turns share: the simulated cluster and its Jobs, and the background load."""

    args: argparse.Namespace
    cluster: SimulatedCluster
    events: PodEvents
    load: BackgroundCrashes
    #: the timed Jobs' pods, crashed in turn
    pods: list[str]
    #: timed failures per turn
    per_turn: int
    submitted: bool = False

    async def turn(
        self, arm: Arm, source: Path, kube: Kube, into: Measured | None
    ) -> list[tuple[int, Any]]:
        """One turn of `arm`: a new controller on a new broker takes the cluster over (the
        first is given the Jobs; the others find them running and adopt them), under the
        background load, then the timed failures, measured `into` (None: the warm-up
        turn, which calibrates the load and measures nothing: a run's first turn was
        its slowest, whichever arm took it). A broker per turn, because tansu's memory
        storage lists a partition on every fetch: on one broker each turn's controller
        would pay for the log of the turns before (docs/kafka.md). The timed Jobs'
        messages of a measured turn, read back from its topics."""
        args = self.args
        async with DevelopmentBroker() as broker:
            settings = kafka_settings(broker.bootstrap_servers, args.partitions)
            async with (
                Published(settings) as published,
                controller_processes(
                    bootstrap=broker.bootstrap_servers,
                    kubeconfig=self.cluster.kubeconfig_path,
                    partitions=args.partitions,
                    qps=args.qps,
                    burst=args.burst,
                    event_loop=arm.event_loop,
                    layout=arm.layout,
                    source=source,
                    identity="bench-reaction",  # each takes the Lease back at once
                    fetch_max_wait_ms=arm.fetch_wait,
                ) as children,
            ):
                if not self.submitted:
                    await submit(kube, args, self.events, self.pods)
                    self.submitted = True
                crashing = asyncio.create_task(self.load.run(published))
                try:
                    await asyncio.sleep(3.0)  # the load reaches its steady state
                    if into is None:
                        await self._calibrate(published)
                    else:
                        await self._measure(arm, children, published, broker, into)
                finally:
                    crashing.cancel()
                    await asyncio.gather(crashing, return_exceptions=True)
            return [] if into is None else await read_topics(settings)

    async def _calibrate(self, published: Published) -> None:
        """Until the background's pace is calibrated; then crash timed pods as a turn
        does, unmeasured, and leave the observations they publish a second out of the
        background's (`CrashPace.leave_room`)."""
        pace = self.load.pace
        await until(lambda: pace.calibrated)
        started, crashes, count = time.perf_counter(), self.load.crashes, await published.count()
        with contextlib.suppress(Behind):  # measured over the crashes made
            await inject(self.events, self.pods, ROOM_FAILURES, self.cluster)
        pace.leave_room(
            time.perf_counter() - started,
            self.load.crashes - crashes,
            await published.count() - count,
        )
        say(
            f"the timed crashes publish {pace.room:,.0f} observations/s: the background "
            f"brings {pace.background_rate:,.0f}/s"
        )

    async def _measure(
        self,
        arm: Arm,
        children: list[ControllerChild],
        published: Published,
        broker: DevelopmentBroker,
        into: Measured,
    ) -> None:
        decider, actuator = (
            next(
                child.metrics
                for child, components in zip(children, arm.layout, strict=True)
                if component in components
            )
            for component in ("decider", "actuator")
        )
        rate = self.args.rate
        late = await caught_up(decider, actuator, behind=rate // 10, queued=rate)
        if late is not None:
            into.behind += 1
            say(
                f"  behind its load after {PATIENCE:.0f} s ({late[0]:,.0f} observations not "
                f"decided, {late[1]:,.0f} decisions queued): this turn is skipped"
            )
            return
        readings = functools.partial(
            Readings.read, published, decider, children, self.cluster, broker
        )
        before = await readings()
        try:
            failures = await inject(self.events, self.pods, self.per_turn, self.cluster)
        except Behind as behind:
            failures = behind.failures
            into.behind += 1
            say(f"  {behind}: this turn ends after {len(failures)} failures")
        turn = await readings() - before
        say(f"  {turn.summary()}")
        into.add(turn, failures)


#: timed crashes made, unmeasured, to learn how many observations a second they publish
ROOM_FAILURES = 40

#: room for the reaction's and the background's pods on the 4 nodes
CAPACITY = {"cpu": "1000", "memory": "4Ti", "pods": "1000"}


async def submit(kube: Kube, args: argparse.Namespace, events: PodEvents, pods: list[str]) -> None:
    """Create the reaction's and the background's Jobs, until all their pods run."""
    for index in range(args.jobs):
        await kube.request("POST", JOBS_PATH, body=reaction_job(index, args.replicas))
    path = f"/apis/batch.volcano.sh/v1alpha1/namespaces/{BACKGROUND}/jobs"
    for index in range(args.background_jobs):
        await kube.request(
            "POST", path, body=job(f"bg-{index}", BACKGROUND_TASKS, namespace=BACKGROUND)
        )
    per_job = sum(replicas for _, replicas, _ in BACKGROUND_TASKS)
    everything = {*pods} | {
        f"bg-{index}-{task}-{i}"
        for index in range(args.background_jobs)
        for task, replicas, _ in BACKGROUND_TASKS
        for i in range(replicas)
    }
    assert len(everything) == len(pods) + args.background_jobs * per_job
    await until(lambda: events.running.issuperset(everything), every=0.1)
    say(
        f"{len(pods)} pods running, and {args.background_jobs} background Jobs' "
        f"{args.background_jobs * per_job}; background load at {args.rate:,} observations/s"
    )


def report(
    arms: list[Arm],
    measured: dict[str, Measured],
    direct: list[Failure],
    log: list[tuple[int, Any]],
) -> None:
    say("")
    every_arm, arms = arms, [arm for arm in arms if measured[arm.label].spent.seconds > 0]
    spent = {arm.label: measured[arm.label].spent for arm in arms}
    for arm in arms:
        say(f"{arm.label}: {spent[arm.label].summary()}")
    verbs = sorted(
        {call for arm in arms for call in spent[arm.label].calls},
        key=lambda call: -sum(spent[arm.label].calls[call] for arm in arms),
    )
    table(
        ["API calls/s the controller made", *(arm.label for arm in arms)],
        [
            [
                call,
                *(
                    f"{spent[arm.label].calls[call] / spent[arm.label].seconds:,.1f}"
                    for arm in arms
                ),
            ]
            for call in verbs
        ]
        + [
            [
                "total",
                *(
                    f"{spent[arm.label].calls.total() / spent[arm.label].seconds:,.1f}"
                    for arm in arms
                ),
            ]
        ],
    )
    latencies = {
        arm.label: [1000 * (f.replaced.result() - f.crashed) for f in measured[arm.label].failures]
        for arm in arms
    }
    floor = [1000 * (f.replaced.result() - f.crashed) for f in direct]
    shares = (("min", 0.0), ("p50", 0.5), ("p90", 0.90), ("p99", 0.99), ("max", 1.0))
    table(
        ["crash -> replacement pod, ms", *(arm.label for arm in arms), "baseline"],
        [
            [
                name,
                *(f"{percentile(latencies[arm.label], share):.1f}" for arm in arms),
                f"{percentile(floor, share):.1f}",
            ]
            for name, share in shares
        ],
    )
    say("(baseline: no controller; this process deletes and creates each pod itself)")
    steps = {arm.label: milestones(measured[arm.label].failures, log) for arm in arms}
    names = list(dict.fromkeys(name for arm in arms for name in steps[arm.label]))
    table(
        [
            "where the time goes (ms after the crash)",
            *(f"{arm.label} {p}" for arm in arms for p in ("p50", "p99")),
        ],
        [
            [
                step,
                *(
                    f"{percentile(values, share):.1f}" if values else "-"
                    for arm in arms
                    for values in [steps[arm.label].get(step, [])]
                    for share in (0.5, 0.99)
                ),
            ]
            for step in names
        ],
    )
    counts = ", ".join(
        f"{arm.label} {len(measured[arm.label].failures)}"
        + (
            f" ({behind} turns behind their load: not caught up or a replacement not made"
            f" within {PATIENCE:.0f} s)"
            if (behind := measured[arm.label].behind)
            else ""
        )
        for arm in every_arm
    )
    say(f"\nfailures: {counts}; target: p99 < 50 ms at 1,000 observations/s")


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--failures", type=int, default=200, help="crashes per arm")
    parser.add_argument("--jobs", type=int, default=20)
    parser.add_argument("--replicas", type=int, default=10, help="pods per job")
    parser.add_argument(
        "--rate",
        type=int,
        default=1_000,
        help="observations/s the watchers publish in all, the timed crashes' among them: the "
        "background's workers are crashed at a pace calibrated at the start",
    )
    parser.add_argument(
        "--background-jobs", type=int, default=100, help="Jobs of a ps and 3 workers crashed"
    )
    parser.add_argument("--partitions", type=int, default=12)
    parser.add_argument("--qps", type=float, default=5_000.0, help="actuator API calls/s")
    parser.add_argument("--burst", type=int, default=10_000)
    parser.add_argument(
        "--time-scale", type=float, default=100.0, help="simulated s per real s (pod start: 1 s)"
    )
    parser.add_argument(
        "--arm",
        type=Arm.parse,
        action="append",
        metavar="LABEL:KEY=VALUE,...",
        help="a controller setting to measure, side by side with the others (repeat it): "
        "loop=auto|asyncio|uvloop (the event loop), processes=one|components (every "
        "component in one process, or each in its own), code=COMMIT (run that commit's "
        "lavalog instead of this checkout's), fetch-wait=MS (the consumers' "
        "fetch_max_wait_ms, which bounds each hop on tansu); default: "
        + " ".join(f"--arm {spec}" for spec in DEFAULT_ARM_SPECS),
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=2,
        help="the arms take turns this many times, each with its share of the failures, so "
        "that a change in the machine's load falls on all of them (default %(default)s)",
    )
    return parser.parse_args()


DEFAULT_ARM_SPECS = ("asyncio:loop=asyncio", "uvloop:loop=uvloop")
DEFAULT_ARMS = [Arm.parse(spec) for spec in DEFAULT_ARM_SPECS]


if __name__ == "__main__":
    run_benchmark(main(parse()))
