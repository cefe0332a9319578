"""`lavalog timeline NAMESPACE/NAME`: one job's phases, decisions and pod attempts."""

from __future__ import annotations

import argparse
import sys

import msgspec

from projections.cli.common import UsageError, add_job, add_source, fail, open_queries
from projections.render import render_timeline

HELP = "show a job's timeline: phases, decisions and every pod attempt"


def configure(parser: argparse.ArgumentParser) -> None:
    add_job(parser)
    add_source(parser)
    parser.add_argument(
        "--incarnation", type=int, help="which job of that name (1 = the first); default latest"
    )
    parser.add_argument("-o", "--output", choices=("text", "json"), default="text")


def run(args: argparse.Namespace) -> int:
    try:
        with open_queries(args) as queries:
            timeline = queries.timeline(args.job, incarnation=args.incarnation)
            incarnations = len(queries.incarnations(args.job))
    except UsageError as exc:
        return fail("timeline", exc)
    if timeline is None:
        print(f"lavalog timeline: no job {args.job}", file=sys.stderr)
        return 1
    if args.output == "json":
        sys.stdout.buffer.write(msgspec.json.format(msgspec.json.encode(timeline)) + b"\n")
    else:
        print(render_timeline(timeline, incarnations=incarnations))
    return 0
