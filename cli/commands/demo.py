"""`lavalog demo`: the whole system in one process, with jobs that show the lifecycle.

Starts the development broker, a simulated cluster (two nodes, four GPUs in all), the
controller and the projections (API and web UI), submits the jobs of the demo's stories
(`cli/demo/stories.py`, manifests in `cli/demo/jobs/`), injects the fault
each story needs when its own pod runs, and shows their phases live. `--once` exits when
every job has finished, prints their timelines and checks every story against its
promised ending: the exit code is 0 only when each one played out, and the verdict names
any that did not.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from lavalog.cli.demo.run import demo
from lavalog.controller.broker import BrokerStartError
from lavalog.controller.logs import configure_logging


def configure(parser: argparse.ArgumentParser) -> None:
    parser.description = __doc__
    parser.add_argument(
        "--once",
        action="store_true",
        help="exit when every job has finished, print the timelines and check every story"
        " against the README's demo table: exit code 1, naming the story, if one did not"
        " play out",
    )
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
        return asyncio.run(
            demo(
                once=args.once,
                time_scale=args.time_scale,
                http_port=args.http_port,
                state_dir=args.state_dir,
                give_up_after=args.timeout,
            )
        )
    except KeyboardInterrupt:
        return 130
    except BrokerStartError as exc:
        print(f"lavalog demo: {exc}", file=sys.stderr)
        return 1
