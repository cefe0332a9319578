"""The demo run behind `lavalog demo`: the whole system in one process, with the jobs of
the demo's stories (`stories.py`, manifests in `jobs/`).

`demo` wires the development broker, a simulated cluster, the controller and the
projections together, submits the stories' jobs, injects the fault each story needs when
its own pod runs, shows their phases live and, with `once`, checks every story against
its promised ending.
"""

from __future__ import annotations

import asyncio
import json
import signal
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

from lavalog.cli.demo.display import JobRow, job_row, render_rows
from lavalog.cli.demo.stories import STORIES, Crash, Fault, OomKill, Preempt, check
from lavalog.controller.app import ControllerConfig, run_controller
from lavalog.controller.broker import DevelopmentBroker
from lavalog.controller.kafka import KafkaSettings
from lavalog.controller.kube import Kube, connect
from lavalog.controller.watchers.core.lease import LeaseTiming
from lavalog.projections.core.render import render_timeline
from lavalog.projections.core.timeline import Timeline
from lavalog.projections.service.app import ServeError, serve
from lavalog.projections.service.live import LiveHub
from lavalog.projections.service.replica import Replica
from lavalog.projections.service.sources.kafka import KafkaSource
from lavalog.projections.service.store.queries import JobFilter, Queries
from lavalog.projections.service.store.sqlite import SqliteLocation
from lavalog.projections.service.store.writer import Store, store_path
from lavalog.simulator import registry
from lavalog.simulator.errors import ApiError
from lavalog.simulator.server import SimulatedCluster

JOBS_DIR = Path(__file__).with_name("jobs")
NAMESPACE = "default"
JOBS_PATH = f"/apis/batch.volcano.sh/v1alpha1/namespaces/{NAMESPACE}/jobs"


async def demo(
    *,
    once: bool,
    time_scale: float,
    http_port: int,
    state_dir: Path | None,
    give_up_after: float,
) -> int:
    """Run the demo until stopped (SIGTERM, SIGINT) or, with `once`, until every story
    played out (or `give_up_after` seconds passed); the exit code: 0 unless a story did
    not play out. `time_scale`: simulated seconds per real second; `http_port`: the web UI's
    (0: any); `state_dir`: the projections store's (None: a new temporary one)."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    state_dir = state_dir or Path(tempfile.mkdtemp(prefix="lavalog-demo-"))
    say("starting the development broker and the simulated cluster ...")
    async with (
        DevelopmentBroker() as broker,
        SimulatedCluster(
            nodes=2, node_capacity={"nvidia.com/gpu": "2"}, time_scale=time_scale
        ) as cluster,
    ):
        kafka = KafkaSettings(
            bootstrap_servers=broker.bootstrap_servers,
            observed_partitions=4,
            decisions_partitions=4,
            state_partitions=4,
            session_timeout_ms=2_000,
            heartbeat_interval_ms=200,
        )
        controller = asyncio.create_task(
            run_controller(
                ControllerConfig(
                    kafka=kafka,
                    kubeconfig=str(cluster.kubeconfig_path),
                    http_port=0,
                    # as `lavalog run`'s (15 s): the one replica has no one to hand over
                    # to, and a shorter renew deadline made a busy laptop's stalls cost
                    # the leadership, whose gap loses pod states by design
                    lease=LeaseTiming(),
                    qps=500.0,
                    burst=1000,
                ),
                stop=stop,
            )
        )
        #: what to say of the web UI: where it is, or why it is not
        ui: list[str] = []
        store = store_path(state_dir)
        projections = asyncio.create_task(_projections(store, kafka, http_port, ui))
        say(f"cluster: {cluster.url} (kubeconfig {cluster.kubeconfig_path})")
        say(f"broker:  {broker.bootstrap_servers}")
        try:
            async with connect(str(cluster.kubeconfig_path)) as kube:
                await _submit(kube)
                faults = {
                    story.name: asyncio.create_task(_inject(cluster, story.faults))
                    for story in STORIES
                    if story.faults
                }
                deadline = time.monotonic() + give_up_after
                try:
                    finished = await _watch(kube, stop, ui, once=once, deadline=deadline)
                    if not once:
                        return 0
                    verdicts = await _verdicts(kube, store, faults, deadline=deadline)
                finally:
                    for fault in faults.values():
                        fault.cancel()
            _print_timelines(store)
            played = _print_verdicts(verdicts)
            return 0 if finished and played else 1
        finally:
            stop.set()
            projections.cancel()
            await asyncio.gather(controller, projections, return_exceptions=True)


async def _projections(store: Path, kafka: KafkaSettings, http_port: int, ui: list[str]) -> None:
    """The projections' store and web UI. The jobs do not need the UI: when it cannot
    start (its port taken), the demo says so, in its view too, and goes on feeding the
    store, which the timelines printed at the end are read from."""
    location = SqliteLocation(store)
    try:
        await serve(
            location=location,
            open_store=lambda: Store(store),
            source=KafkaSource(kafka),
            host="127.0.0.1",
            port=http_port,
            started=lambda url: ui.append(f"web UI: {url}   (Ctrl-C to stop)"),
        )
    except ServeError as error:
        ui.append(f"the web UI could not start: {error}; the demo goes on without it")
        say(ui[-1])
        queries = Queries(location)
        try:
            await Replica(lambda: Store(store), KafkaSource(kafka), queries, LiveHub()).run()
        finally:
            queries.close()


async def _submit(kube: Kube) -> None:
    for story in STORIES:
        for name in story.jobs:
            path = JOBS_DIR / f"{name}.yaml"
            await kube.request("POST", JOBS_PATH, body=yaml.safe_load(path.read_text()))
            say(f"submitted {name:<17} ({path.name})")


async def _inject(cluster: SimulatedCluster, faults: tuple[Fault, ...]) -> str:
    """Inject a story's faults one after another, each `after` simulated seconds into the
    next run of its pod (a pod of that name none of the faults before hit), counted from
    when its containers started; an empty string when all were delivered, else why one
    was not.

    Each story waits for its own pods, concurrently with the others. It wakes on every
    write of a pod (no polling delay: one turn of the event loop) and times each
    fault on the cluster's clock, the one the pod's program runs on. The program runs
    many times longer than `after` (a test keeps it so), so the fault lands while it
    runs at any time scale where the controller itself keeps up (tried up to 1000).
    """
    store = cluster.objects.store
    hit: set[str] = set()
    for fault in faults:
        while (pod := _running(cluster, fault.pod, hit)) is None:
            await store.wait(registry.POD)
        uid = pod["metadata"]["uid"]
        hit.add(uid)
        await cluster.clock.sleep(max(0.0, fault.after - _running_for(cluster, pod)))
        now = _running(cluster, fault.pod, hit - {uid})
        if now is None or now["metadata"]["uid"] != uid:
            return f"{fault.pod} stopped running before its fault, {fault.after:g} s in"
        try:
            _deliver(cluster, fault)
        except ApiError as error:
            return f"{fault.pod}: {type(fault).__name__} not delivered: {error}"
    return ""


def _running_for(cluster: SimulatedCluster, pod: dict[str, Any]) -> float:
    """Simulated seconds since the pod's containers started (their `startedAt`, whole
    seconds). The fault is timed from there, not from when this task woke to see the pod
    running: on a busy machine that can be late enough for the program to end first."""
    starts = [
        datetime.fromisoformat(state["running"]["startedAt"])
        for status in pod.get("status", {}).get("containerStatuses", [])
        if "running" in (state := status.get("state", {}))
    ]
    return (cluster.clock.now() - max(starts)).total_seconds() if starts else 0.0


def _deliver(cluster: SimulatedCluster, fault: Fault) -> None:
    admin = cluster.admin
    if isinstance(fault, Crash):
        admin.crash(NAMESPACE, fault.pod, fault.exit_code)
    elif isinstance(fault, Preempt):
        admin.preempt(NAMESPACE, fault.pod)
    elif isinstance(fault, OomKill):
        admin.oom_kill(NAMESPACE, fault.pod, fault.container)


def _running(cluster: SimulatedCluster, name: str, hit: set[str]) -> dict[str, Any] | None:
    """The pod `name` if it runs and is not one of the uids `hit` already."""
    pod = cluster.objects.find(registry.POD, NAMESPACE, name)
    if pod is None or pod["metadata"]["uid"] in hit or pod["metadata"].get("deletionTimestamp"):
        return None
    return pod if pod.get("status", {}).get("phase") == "Running" else None


async def _watch(
    kube: Kube, stop: asyncio.Event, ui: list[str], *, once: bool, deadline: float
) -> bool:
    """Show the jobs until all finished (with `once`, by the `deadline` of
    `time.monotonic()`) or until stopped; True if finished."""
    started = time.monotonic()
    interactive = sys.stdout.isatty()
    shown = ""
    while not stop.is_set():
        rows = await _rows(kube)
        view = render_rows(rows, elapsed=time.monotonic() - started)
        if ui:
            view += f"\n\n{ui[-1]}"
        if interactive:
            sys.stdout.write("\x1b[H\x1b[J" + view + "\n")
            sys.stdout.flush()
        elif _changed_part(view) != _changed_part(shown):
            print(view.split("\n", 1)[1] + "\n", flush=True)
        shown = view
        if once and rows and all(row.finished for row in rows):
            return True
        if once and time.monotonic() > deadline:
            say(f"not finished after {deadline - started:.0f} s")
            return False
        await asyncio.sleep(0.5)
    return False


def _changed_part(view: str) -> str:
    """The view without its clock line, to print only real changes when not a terminal."""
    return view.split("\n", 1)[-1]


async def _rows(kube: Kube) -> list[JobRow]:
    jobs: dict[str, Any] = json.loads(await kube.request("GET", JOBS_PATH))
    return sorted((job_row(job) for job in jobs["items"]), key=lambda row: row.name)


async def _verdicts(
    kube: Kube, path: Path, faults: dict[str, asyncio.Task[str]], *, deadline: float
) -> dict[str, list[str]]:
    """Each story's problems (none: it played out), once none is left or at the
    `deadline` (of `time.monotonic()`, the one the user gave the whole run). A finished
    job's last pod kills and the projections' reading of the last events lag its phase
    by however long a busy machine takes: the verdict waits for them, not for a fixed
    few seconds."""
    queries = Queries(path)
    try:
        while True:
            statuses = {row.name: row for row in await _rows(kube)}
            timelines = _timelines(queries)
            verdicts = {
                story.name: _fault_problems(faults.get(story.name))
                + check(story, timelines, statuses)
                for story in STORIES
            }
            if not any(verdicts.values()) or time.monotonic() > deadline:
                return verdicts
            await asyncio.sleep(0.2)
    finally:
        queries.close()


def _fault_problems(fault: asyncio.Task[str] | None) -> list[str]:
    if fault is None:
        return []
    if not fault.done():
        return ["fault: not injected, its pod never ran long enough"]
    error = fault.exception()
    if error is not None:
        return [f"fault: {error!r}"]
    return [f"fault: {fault.result()}"] if fault.result() else []


def _timelines(queries: Queries) -> dict[str, Timeline]:
    """The latest timeline of every job, by name."""
    found: dict[str, Timeline] = {}
    for summary in queries.jobs(JobFilter(), limit=100).jobs:
        timeline = queries.timeline(summary.key)
        if timeline is not None:
            found[timeline.name] = timeline
    return found


def _print_timelines(path: Path) -> None:
    queries = Queries(path)
    try:
        for _, timeline in sorted(_timelines(queries).items()):
            print("\n" + render_timeline(timeline))
    finally:
        queries.close()


def _print_verdicts(verdicts: dict[str, list[str]]) -> bool:
    """Say how each story went (see the README's demo table); True if all played out."""
    print("\nstories (as in the README's demo table)")
    for story in STORIES:
        problems = verdicts[story.name]
        if problems:
            print(f"  FAIL  {story.name}: expected {story.ending}")
        else:
            print(f"  ok    {story.name}: {story.ending}")
        for problem in problems:
            print(f"          {problem}")
    failed = [name for name, problems in verdicts.items() if problems]
    jobs = sum(len(story.jobs) for story in STORIES)
    if failed:
        print(f"\n{len(failed)} of {len(verdicts)} stories did not play out: {'; '.join(failed)}")
    else:
        print(f"\nall {len(verdicts)} stories ({jobs} jobs) played out")
    return not failed


def say(text: str) -> None:
    print(text, flush=True)
