"""`lavalog whatif --all` over 10,000 jobs in the projections store.

    python bench/whatif.py [--jobs 10000]

The store holds what `bench/replay.py` writes (ps/worker jobs whose workers fail and
restart, about 100 events each, with the real decider's decisions). The what-if sets
`maxRetry` to 1, so most jobs diverge. Baseline from the same run: reading and decoding
every job's events from the store, which the what-if does before it replays anything.
Target (issue 13): 10,000 jobs in < 60 s.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.replay import generated_store
from lavalog.cli.commands.whatif import summarise
from lavalog.events.codec import decode_event
from lavalog.projections.core.whatif import parse_set
from lavalog.projections.service.store.queries import Queries


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=10_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="lavalog-bench-") as scratch:
        db, events = generated_store(Path(scratch), jobs=args.jobs)
        queries = Queries(db)
        started = time.perf_counter()
        keys = queries.keys()
        decoded = sum(len([decode_event(s.body) for s in queries.events(k)]) for k in keys)
        read_seconds = time.perf_counter() - started
        started = time.perf_counter()
        summary = summarise(queries, parse_set("spec.maxRetry=1"))
        seconds = time.perf_counter() - started
        queries.close()
    print(f"whatif-read-baseline jobs={args.jobs} events={decoded} seconds={read_seconds:.1f}")
    print(
        f"whatif-all jobs={summary.jobs} events={events} seconds={seconds:.1f} "
        f"jobs/s={summary.jobs / seconds:.0f} diverged={summary.diverged} "
        f"({seconds / read_seconds:.1f}x the read) target=<60s "
        f"{'MET' if seconds < 60 else 'NOT MET'}"
    )


if __name__ == "__main__":
    main()
