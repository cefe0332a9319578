"""What the web UI asks of the projections API over a store of 10,000 jobs.

    python bench/job_pages.py [--jobs 10000] [--repeat 20]

The store holds what `bench/replay.py` writes (ps/worker jobs whose workers fail and
restart, about 100 events each, over 50 namespaces). Each figure is the median of
`--repeat` requests over HTTP (aiohttp's client, on this machine):

- the job list's first page filtered by the server (a phase, a namespace and phase, a
  search), and the counts its filters show (`/api/v1/stats`, asked at most every 15 s),
  beside the unfiltered first page (baseline: what the list asked before it had filters);
- a job page's answer (its timeline, and its Kubernetes Events drawn from its decisions),
  beside the job's raw events (baseline: reading that job's events from the store).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from aiohttp import ClientSession, web

from bench.replay import generated_store
from lavalog.projections.service.app import create_app, url_of
from lavalog.projections.service.live import LiveHub
from lavalog.projections.service.store.queries import Queries


class _Ready:
    ready = True
    error = None

    def lag(self) -> dict[tuple[str, int], int]:
        return {}


async def _median_ms(session: ClientSession, url: str, repeat: int) -> tuple[float, int]:
    """The median time of `repeat` GETs of `url`, in ms, and the answer's size."""
    times: list[float] = []
    size = 0
    for _ in range(repeat):
        started = time.perf_counter()
        async with session.get(url) as response:
            body = await response.read()
            assert response.status == 200, (url, response.status, body[:200])
        times.append((time.perf_counter() - started) * 1000)
        size = len(body)
    return statistics.median(times), size


async def measure(db: Path, repeat: int) -> list[tuple[str, float, int]]:
    queries = Queries(db)
    runner = web.AppRunner(create_app(queries=queries, hub=LiveHub(), status=_Ready()))
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    base = url_of(runner, "127.0.0.1") + "api/v1/"
    key = queries.keys()[len(queries.keys()) // 2]
    asked = [
        ("list-baseline (first page, unfiltered)", "jobs?limit=100"),
        ("list phase=Running,Completed", "jobs?limit=100&phase=Running,Completed"),
        ("list namespace+phase", "jobs?limit=100&namespace=team-7&phase=Running,Completed"),
        ("list search q=train-99", "jobs?limit=100&q=train-99"),
        ("stats (filter counts)", "stats"),
        ("stats namespace=team-7", "stats?namespace=team-7"),
        ("job-baseline (its raw events)", f"jobs/{key}/events"),
        ("job page (timeline + Events)", f"jobs/{key}"),
    ]
    figures = []
    try:
        async with ClientSession() as session:
            for name, path in asked:
                median, size = await _median_ms(session, base + path, repeat)
                figures.append((name, median, size))
    finally:
        await runner.cleanup()
        queries.close()
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="lavalog-bench-") as scratch:
        db, events = generated_store(Path(scratch), jobs=args.jobs)
        figures = asyncio.run(measure(db, args.repeat))
    print(f"job-pages jobs={args.jobs} events={events} repeat={args.repeat} (median ms)")
    for name, median, size in figures:
        print(f"  {name:<40} {median:8.1f} ms  {size:>8} bytes")


if __name__ == "__main__":
    main()
