"""Scale: 10,000 one-pod Volcano Jobs submitted at once; time until all their pods exist.

    python bench/scale.py [--jobs 10000] [--qps 5000] [--burst 10000]

The simulated cluster (`lavalog sim`), the development broker and the controller run as
three processes, as in a deployment; this process submits the Jobs (32 in flight) and
watches pods and Jobs, printing when every pod exists and when every Job is Running.
The controller's actuator rate limit is raised (`ControllerConfig(qps=, burst=)`; at the
default qps=50, 10,000 pod creates alone take 200 s). Baseline from the same run: the
simulator's raw pod-create rate, the same number of bare pods POSTed directly with the
actuator's concurrency (32) after the controller has stopped. Reference, not measured:
Volcano's tuning guide reports ~180-250 s for this shape on a real cluster. Target
(issue 10): all pods created in < 15 s. Then the API calls the controller made per
job until all were Running, by verb and resource, counted by the API server (the
benchmark's own requests taken off), beside Volcano's.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.harness import (
    bounded,
    controller_process,
    kafka_settings,
    say,
    simulator_process,
    table,
)
from lavalog.controller.broker import DevelopmentBroker
from lavalog.controller.kafka import ensure_topics
from lavalog.controller.kube import Kube, connect

NAMESPACE = "scale"
RAW_NAMESPACE = "raw"
CONCURRENCY = 32
JOBS_PATH = f"/apis/batch.volcano.sh/v1alpha1/namespaces/{NAMESPACE}/jobs"
PODS_PATH = f"/api/v1/namespaces/{NAMESPACE}/pods"
CONTAINER = {
    "name": "main",
    "image": "busybox",
    "command": ["sh", "-c", "sleep infinity"],
    "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}},
}


def job(index: int) -> dict[str, Any]:
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": f"job-{index}", "namespace": NAMESPACE},
        "spec": {
            "minAvailable": 1,
            "schedulerName": "volcano",
            "tasks": [
                {
                    "name": "main",
                    "replicas": 1,
                    "template": {"spec": {"restartPolicy": "Never", "containers": [CONTAINER]}},
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
        "spec": {"schedulerName": "bench-none", "containers": [CONTAINER]},
    }


class _State(msgspec.Struct):
    phase: str = ""


class _Status(msgspec.Struct):
    state: _State = msgspec.field(default_factory=_State)


class _Meta(msgspec.Struct):
    name: str


class _Object(msgspec.Struct):
    metadata: _Meta
    status: _Status = msgspec.field(default_factory=_Status)


class _WatchEvent(msgspec.Struct):
    type: str
    object: _Object


_decode = msgspec.json.Decoder(_WatchEvent).decode


class Progress:
    """Counts from the watches, and when each count reached the number of jobs."""

    def __init__(self, jobs: int) -> None:
        self.jobs = jobs
        self.submitted = 0
        self.pods: set[str] = set()
        self.running: set[str] = set()
        self.done: dict[str, float] = {}

    def reached(self, what: str, count: int) -> None:
        if count >= self.jobs and what not in self.done:
            self.done[what] = time.perf_counter()


#: Volcano's calls for a one-pod Job (pkg/controllers/job/job_controller_actions.go): the
#: PodGroup and the pod created once; the status written by `initiateJob` and by every
#: `syncJob` that changes it (Pending, pods created, Running); Jobs read from its informer
#: cache; no Events on the way to Running
VOLCANO_CALLS = {
    "create podgroups": "1",
    "create pods": "1",
    "update jobs/status": "1 per changing sync",
    "get jobs": "0 (cache)",
    "create events": "0",
}


async def api_calls(kube: Kube) -> Counter[str]:
    """Requests the simulated API server has served so far, by "verb resource"."""
    state = msgspec.json.decode(await kube.request("GET", "/sim/state"))
    return Counter(state["apiCalls"])


async def follow(
    kube: Kube, path: str, on_event: Callable[[_WatchEvent], bool], own: Counter[str]
) -> None:
    """Watch `path` from now on until `on_event` returns True; `own` counts its requests."""
    resource = path.rsplit("/", 1)[1]
    own[f"list {resource}"] += 1
    own[f"watch {resource}"] += 1
    listed = msgspec.json.decode(await kube.request("GET", path, query={"limit": 1}))
    query = {"watch": 1, "resourceVersion": listed["metadata"]["resourceVersion"]}
    async with kube.stream(path, query, request_timeout=3600) as lines:
        async for line in lines:
            if on_event(_decode(line)):
                return


async def submit_jobs(kube: Kube, args: argparse.Namespace, own: Counter[str]) -> dict[str, float]:
    """Seconds until all submitted, all pods, all Running; `own` counts this side's requests."""
    progress = Progress(args.jobs)

    def on_pod(event: _WatchEvent) -> bool:
        if event.type == "ADDED":
            progress.pods.add(event.object.metadata.name)
            progress.reached("pods", len(progress.pods))
        return "pods" in progress.done

    def on_job(event: _WatchEvent) -> bool:
        if event.object.status.state.phase == "Running":
            progress.running.add(event.object.metadata.name)
            progress.reached("running", len(progress.running))
        return "running" in progress.done

    async def submit(index: int) -> None:
        own["create jobs"] += 1
        await kube.request("POST", JOBS_PATH, body=job(index))
        progress.submitted += 1
        progress.reached("submitted", progress.submitted)

    watches = asyncio.gather(
        follow(kube, PODS_PATH, on_pod, own), follow(kube, JOBS_PATH, on_job, own)
    )
    await asyncio.sleep(0.5)  # both watches are open
    started = time.perf_counter()
    submitting = asyncio.create_task(bounded(args.jobs, CONCURRENCY, submit))
    while not watches.done():
        await asyncio.wait([watches], timeout=5.0)
        say(
            f"  {time.perf_counter() - started:6.1f} s  submitted {progress.submitted:>7,}"
            f"  pods {len(progress.pods):>7,}  jobs Running {len(progress.running):>7,}"
        )
    await asyncio.gather(watches, submitting)
    return {what: at - started for what, at in progress.done.items()}


async def create_bare_pods(kube: Kube, count: int) -> float:
    collection = f"/api/v1/namespaces/{RAW_NAMESPACE}/pods"
    await kube.request("POST", "/api/v1/namespaces", body={"metadata": {"name": RAW_NAMESPACE}})
    started = time.perf_counter()
    await bounded(count, CONCURRENCY, lambda i: _post(kube, collection, bare_pod(i)))
    return time.perf_counter() - started


async def _post(kube: Kube, collection: str, body: dict[str, Any]) -> None:
    await kube.request("POST", collection, body=body)


async def main(args: argparse.Namespace) -> None:
    nodes = -(-args.jobs // args.pods_per_node)
    async with DevelopmentBroker() as broker:
        await ensure_topics(kafka_settings(broker.bootstrap_servers, args.partitions))
        async with simulator_process(
            nodes=nodes,
            pods_per_node=args.pods_per_node,
            time_scale=args.time_scale,
            history=max(100_000, 50 * args.jobs),
        ) as cluster:
            say(f"cluster {cluster.url} ({nodes} nodes), broker {broker.bootstrap_servers}")
            async with connect(str(cluster.kubeconfig)) as kube:
                await kube.request(
                    "POST", "/api/v1/namespaces", body={"metadata": {"name": NAMESPACE}}
                )
                async with controller_process(
                    bootstrap=broker.bootstrap_servers,
                    kubeconfig=cluster.kubeconfig,
                    partitions=args.partitions,
                    qps=args.qps,
                    burst=args.burst,
                ):
                    say(f"controller ready (qps={args.qps:g}, burst={args.burst}); submitting")
                    before = await api_calls(kube)
                    own: Counter[str] = Counter()
                    times = await submit_jobs(kube, args, own)
                    calls = await api_calls(kube) - before - own
                say(f"controller stopped; creating {args.jobs:,} bare pods (baseline)")
                raw = await create_bare_pods(kube, args.jobs)
    jobs = args.jobs
    table(
        ["scale", "jobs", "seconds", "per second"],
        [
            [f"{what}", f"{jobs:,}", f"{times[key]:.1f}", f"{jobs / times[key]:,.0f}"]
            for what, key in (
                ("all Jobs submitted (32 in flight)", "submitted"),
                ("all pods created", "pods"),
                ("all Jobs Running", "running"),
            )
        ]
        + [
            [
                "baseline: bare pod creates, same simulator",
                f"{jobs:,}",
                f"{raw:.1f}",
                f"{jobs / raw:,.0f}",
            ],
            ["reference: Volcano, real cluster (published)", "10,000", "180-250", "40-56"],
        ],
    )
    say(
        f"\npods created: {raw / times['pods']:.0%} of the raw pod-create rate; "
        f"target: all pods in < 15 s for 10,000 jobs\n"
    )
    table(
        ["API calls per job until Running (server side)", "lavalog", "Volcano"],
        [
            [name, f"{count / jobs:.2f}", VOLCANO_CALLS.get(name, "-")]
            for name, count in sorted(calls.items(), key=lambda kv: -kv[1])
        ]
        + [[name, "0", volcano] for name, volcano in VOLCANO_CALLS.items() if name not in calls]
        + [["total", f"{calls.total() / jobs:.2f}", "2 + status writes"]],
    )


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--qps", type=float, default=5_000.0, help="actuator API calls/s")
    parser.add_argument("--burst", type=int, default=10_000, help="actuator token bucket size")
    parser.add_argument("--partitions", type=int, default=12, help="observed and decisions")
    parser.add_argument("--pods-per-node", type=int, default=250)
    parser.add_argument(
        "--time-scale", type=float, default=10.0, help="simulated s per real s (pod start: 1 s)"
    )
    return parser.parse_args()


if __name__ == "__main__":
    asyncio.run(main(parse()))
