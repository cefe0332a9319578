"""Simulated cluster throughput with many pods stored: creates/s, list time, watch events/s.

    python bench/simulator.py [--pods 200000] [--watchers 4] [--updates 20000]

The cluster runs in its own process (`lavalog sim`), as under a controller benchmark,
and this process is the client: POSTs with bounded concurrency, a watcher counting
the events of the creation, a full LIST, a full watch replay (synthetic ADDED for
every stored pod), then `--watchers` watches fanning out `--updates` label patches.
Each phase also prints the simulated cluster's CPU time per request (user + system, from
/proc): what one pod write costs it, whatever else the machine was doing. Figures are
printed, not asserted: later benchmarks use them to know the simulator is not their
bottleneck.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.harness import cpu_seconds, run_benchmark, stop_child

ROOT = Path(__file__).resolve().parents[1]
NAMESPACE = "bench"


def pod(i: int) -> bytes:
    """A job-controller-shaped pod the scheduler keeps pending (its PodGroup never comes)."""
    name = f"job{i}-worker-0"
    return json.dumps(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "labels": {"volcano.sh/job-name": f"job{i}", "volcano.sh/task-spec": "worker"},
                "annotations": {
                    "scheduling.k8s.io/group-name": f"job{i}",
                    "volcano.sh/task-index": "0",
                },
            },
            "spec": {
                "schedulerName": "volcano",
                "restartPolicy": "OnFailure",
                "containers": [
                    {
                        "name": "main",
                        "image": "busybox",
                        "command": ["sh", "-c", "sleep 60"],
                        "env": [{"name": "VC_TASK_INDEX", "value": "0"}],
                        "resources": {"requests": {"cpu": "1", "memory": "1Gi"}},
                    }
                ],
            },
        }
    ).encode()


@asynccontextmanager
async def cluster(history: int) -> AsyncIterator[tuple[str, int]]:
    """Start `lavalog sim` on a free port; yield its URL and process id."""
    with tempfile.TemporaryDirectory(prefix="lavalog-bench-") as tmp:
        command = [
            sys.executable, "-m", "lavalog.cli.main", "sim", "--port", "0", "--nodes", "0",
            "--history-size", str(history), "--kubeconfig", str(Path(tmp) / "kubeconfig"),
        ]  # fmt: skip
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        proc = await asyncio.create_subprocess_exec(
            *command, cwd=ROOT, stdout=subprocess.PIPE, env=env
        )
        assert proc.stdout is not None
        try:
            line = (await asyncio.wait_for(proc.stdout.readline(), 30)).decode()
            yield line.split(" at ")[1].split()[0], proc.pid
        finally:
            await stop_child(proc)


async def count_events(session: aiohttp.ClientSession, url: str, expected: int) -> float:
    """Read watch lines until `expected` arrived; return when the last one did."""
    seen = 0
    async with session.get(url, timeout=aiohttp.ClientTimeout(total=None)) as response:
        async for _ in response.content:
            seen += 1
            if seen >= expected:
                break
    return time.perf_counter()


def report(what: str, count: int, seconds: float, unit: str, note: str, cpu: float = 0.0) -> None:
    """One phase: its rate, and with `cpu` the cluster's CPU seconds over it per request."""
    rate = count / seconds
    per = f"{cpu / count * 1e6:6.0f} us CPU each" if cpu else " " * 17
    print(
        f"{what:<15}{count:>9,} in {seconds:6.2f} s = {rate:>9,.0f} {unit:<9} {per}  {note}",
        flush=True,
    )


async def bounded(n: int, concurrency: int, make: Callable[[int], Awaitable[None]]) -> None:
    """Call `make(0..n-1)` with at most `concurrency` calls in flight."""
    queue = iter(range(n))

    async def worker() -> None:
        for i in queue:
            await make(i)

    await asyncio.gather(*(worker() for _ in range(concurrency)))


async def main(args: argparse.Namespace) -> None:
    async with (
        cluster(args.pods + args.updates + 1000) as (url, pid),
        aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=args.concurrency + args.watchers + 2)
        ) as session,
    ):
        async with session.post(
            f"{url}/api/v1/namespaces", json={"metadata": {"name": NAMESPACE}}
        ) as r:
            assert r.status == 201
        pods_url = f"{url}/api/v1/namespaces/{NAMESPACE}/pods"
        async with session.get(pods_url) as r:
            start_rv = (await r.json())["metadata"]["resourceVersion"]
        headers = {"Content-Type": "application/json"}

        async def create(i: int) -> None:
            async with session.post(pods_url, data=pod(i), headers=headers) as r:
                assert r.status == 201, await r.text()

        watcher = asyncio.create_task(
            count_events(session, f"{pods_url}?watch=1&resourceVersion={start_rv}", args.pods)
        )
        began, cpu = time.perf_counter(), cpu_seconds(pid)
        await bounded(args.pods, args.concurrency, create)
        created, cpu = time.perf_counter(), cpu_seconds(pid) - cpu
        watched = await watcher
        report(
            "create",
            args.pods,
            created - began,
            "creates/s",
            f"({args.concurrency} in flight)",
            cpu,
        )
        report("watch (live)", args.pods, watched - began, "events/s", "while creating")

        began = time.perf_counter()
        async with session.get(pods_url) as r:
            body = await r.read()
        listed = time.perf_counter()
        items = len(json.loads(body)["items"])
        report("list", items, listed - began, "pods/s", f"({len(body) / 2**20:,.0f} MiB)")

        began = time.perf_counter()
        done = await count_events(session, f"{pods_url}?watch=1", args.pods)
        report("watch (replay)", args.pods, done - began, "events/s", "(ADDED for every pod)")

        async with session.get(f"{pods_url}?limit=1") as r:
            rv = (await r.json())["metadata"]["resourceVersion"]
        watchers = [
            asyncio.create_task(
                count_events(session, f"{pods_url}?watch=1&resourceVersion={rv}", args.updates)
            )
            for _ in range(args.watchers)
        ]
        patch_headers = {"Content-Type": "application/merge-patch+json"}

        async def update(i: int) -> None:
            body = json.dumps({"metadata": {"labels": {"bench/round": str(i)}}}).encode()
            async with session.patch(
                f"{pods_url}/job{i % args.pods}-worker-0", data=body, headers=patch_headers
            ) as r:
                assert r.status == 200, await r.text()

        began, cpu = time.perf_counter(), cpu_seconds(pid)
        await bounded(args.updates, args.concurrency, update)
        patched, cpu = time.perf_counter(), cpu_seconds(pid) - cpu
        finished = max(await asyncio.gather(*watchers))
        delivered = args.updates * args.watchers
        report(
            "patch",
            args.updates,
            patched - began,
            "updates/s",
            f"({args.pods:,} pods stored, {args.watchers} watching)",
            cpu,
        )
        report(
            "watch (fan-out)",
            delivered,
            finished - began,
            "events/s",
            f"({args.watchers} watchers)",
        )


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--pods", type=int, default=200_000)
    parser.add_argument("--watchers", type=int, default=4)
    parser.add_argument("--updates", type=int, default=20_000)
    parser.add_argument("--concurrency", type=int, default=64)
    return parser.parse_args(argv)


if __name__ == "__main__":
    run_benchmark(main(parse()))
