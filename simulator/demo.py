"""`lavalog demo`: the whole system in one process, with jobs that show the lifecycle.

Starts the development broker, a simulated cluster (two nodes, four GPUs in all), the
controller and the projections (API and web UI), submits the jobs in `demo_jobs/`,
injects the faults their story needs, and shows their phases live. `--once` exits when
every job has finished and prints their timelines.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from controller.app import ControllerConfig, run_controller
from controller.broker import DevelopmentBroker
from controller.kafka import KafkaSettings
from controller.kube import Kube, connect
from controller.logs import configure_logging
from projections.app import serve
from projections.kafka_source import KafkaSource
from projections.queries import JobFilter, Queries
from projections.render import render_timeline
from projections.store import Store, store_path
from simulator import registry
from simulator.demo_display import JobRow, job_row, render_rows
from simulator.server import SimulatedCluster

HELP = "run everything in one process (cluster, broker, controller, UI) with example jobs"

JOBS_DIR = Path(__file__).with_name("demo_jobs")
#: pod -> exit code of the one crash the story of its job needs
CRASHES = {"tensorflow-dist-worker-1": 1, "mpi-allreduce-mpimaster-0": 3}
JOBS_PATH = "/apis/batch.volcano.sh/v1alpha1/namespaces/default/jobs"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.description = __doc__
    parser.add_argument("--once", action="store_true", help="exit when every job has finished")
    parser.add_argument(
        "--time-scale",
        type=float,
        default=10.0,
        help="simulated seconds per real second (a job's `sleep 60` takes 6 s at 10)",
    )
    parser.add_argument("--http-port", type=int, default=8000, help="port of the web UI (0: any)")
    parser.add_argument(
        "--state-dir", type=Path, default=None, help="where the projections store lives"
    )
    parser.add_argument(
        "--timeout", type=float, default=300.0, help="with --once: give up after this long"
    )


def run(args: argparse.Namespace) -> int:
    configure_logging(level="warning", json=False)
    try:
        return asyncio.run(_demo(args))
    except KeyboardInterrupt:
        return 130


async def _demo(args: argparse.Namespace) -> int:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    state_dir = args.state_dir or Path(tempfile.mkdtemp(prefix="lavalog-demo-"))
    say("starting the development broker and the simulated cluster ...")
    async with (
        DevelopmentBroker() as broker,
        SimulatedCluster(
            nodes=2, node_capacity={"nvidia.com/gpu": "2"}, time_scale=args.time_scale
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
                    lease_duration=5.0,
                    qps=500.0,
                    burst=1000,
                ),
                stop=stop,
            )
        )
        ui_url: list[str] = []
        store = Store(store_path(state_dir))
        projections = asyncio.create_task(
            serve(
                store=store,
                source=KafkaSource(kafka),
                host="127.0.0.1",
                port=args.http_port,
                started=ui_url.append,
            )
        )
        say(f"cluster: {cluster.url} (kubeconfig {cluster.kubeconfig_path})")
        say(f"broker:  {broker.bootstrap_servers}")
        try:
            async with connect(str(cluster.kubeconfig_path)) as kube:
                await _submit(kube)
                faults = asyncio.create_task(_inject_crashes(cluster))
                finished = await _watch(
                    kube, stop, ui_url, once=args.once, give_up_after=args.timeout
                )
                faults.cancel()
            if args.once:
                await asyncio.sleep(1.0)  # let the projections catch up with the last events
                _print_timelines(store.path)
                return 0 if finished else 1
            return 0
        finally:
            stop.set()
            projections.cancel()
            await asyncio.gather(controller, projections, return_exceptions=True)
            store.close()


async def _submit(kube: Kube) -> None:
    for path in sorted(JOBS_DIR.glob("*.yaml")):
        job = yaml.safe_load(path.read_text())
        await kube.request("POST", JOBS_PATH, body=job)
        say(f"submitted {job['metadata']['name']:<17} ({path.name})")


async def _inject_crashes(cluster: SimulatedCluster) -> None:
    """Crash each story's pod once, a few seconds after it first runs."""
    pending = dict(CRASHES)
    while pending:
        for name, code in list(pending.items()):
            pod = cluster.objects.find(registry.POD, "default", name)
            if pod is not None and pod.get("status", {}).get("phase") == "Running":
                await asyncio.sleep(2.0)
                if cluster.kubelet.crash("default", name, code):
                    del pending[name]
        await asyncio.sleep(0.2)


async def _watch(
    kube: Kube, stop: asyncio.Event, ui_url: list[str], *, once: bool, give_up_after: float
) -> bool:
    """Show the jobs until all finished (with `once`) or until stopped; True if finished."""
    started = time.monotonic()
    interactive = sys.stdout.isatty()
    shown = ""
    while not stop.is_set():
        rows = await _rows(kube)
        view = render_rows(rows, elapsed=time.monotonic() - started)
        if ui_url:
            view += f"\n\nweb UI: {ui_url[0]}   (Ctrl-C to stop)"
        if interactive:
            sys.stdout.write("\x1b[H\x1b[J" + view + "\n")
            sys.stdout.flush()
        elif _changed_part(view) != _changed_part(shown):
            print(view.split("\n", 1)[1] + "\n", flush=True)
        shown = view
        if once and rows and all(row.finished for row in rows):
            return True
        if once and time.monotonic() - started > give_up_after:
            say(f"not finished after {give_up_after:.0f} s")
            return False
        await asyncio.sleep(0.5)
    return False


def _changed_part(view: str) -> str:
    """The view without its clock line, to print only real changes when not a terminal."""
    return view.split("\n", 1)[-1]


async def _rows(kube: Kube) -> list[JobRow]:
    jobs: dict[str, Any] = json.loads(await kube.request("GET", JOBS_PATH))
    return sorted((job_row(job) for job in jobs["items"]), key=lambda row: row.name)


def _print_timelines(path: Path) -> None:
    queries = Queries(path)
    try:
        page = queries.jobs(JobFilter(), limit=100)
        for summary in sorted(page.jobs, key=lambda job: job.key):
            timeline = queries.timeline(summary.key)
            if timeline is not None:
                print("\n" + render_timeline(timeline))
    finally:
        queries.close()


def say(text: str) -> None:
    print(text, flush=True)
