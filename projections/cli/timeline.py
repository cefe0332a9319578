"""`lavalog timeline NAMESPACE/NAME`: one job's phases, decisions and pod attempts."""

from __future__ import annotations

import argparse
import sys

from controller.commands.output import write_json, write_yaml
from projections.cli.common import UsageError, add_job, add_source, fail, open_queries
from projections.queries import not_found
from projections.render import render_timeline

HELP = "show a job's timeline: phases, decisions and every pod attempt"


def configure(parser: argparse.ArgumentParser) -> None:
    add_job(parser)
    add_source(parser)
    parser.add_argument(
        "--incarnation",
        type=int,
        help="which job of that name (1 = the first; default: the latest)",
    )
    parser.add_argument("-o", "--output", choices=("text", "json", "yaml"), default="text")


def run(args: argparse.Namespace) -> int:
    try:
        with open_queries(args) as queries:
            timeline = queries.timeline(args.job, incarnation=args.incarnation)
            incarnations = len(queries.incarnations(args.job))
    except UsageError as exc:
        return fail("timeline", exc)
    if timeline is None:
        print(
            f"lavalog timeline: {not_found(args.job, args.incarnation, incarnations)}",
            file=sys.stderr,
        )
        return 1
    if args.output == "json":
        write_json(timeline)
    elif args.output == "yaml":
        write_yaml(timeline)
    else:
        print(render_timeline(timeline, incarnations=incarnations))
    return 0
