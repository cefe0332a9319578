"""`lavalog timeline [NAMESPACE/]NAME`: one job's phases, decisions and pod attempts."""

from __future__ import annotations

import argparse
import sys

from lavalog.cli import exit_codes
from lavalog.cli.output import write_json, write_yaml
from lavalog.cli.read_options import UsageError, add_job, add_source, fail, job_of, open_queries
from lavalog.projections.core.render import render_timeline
from lavalog.projections.core.timeline import Timeline
from lavalog.projections.core.wire import to_wire
from lavalog.projections.service.store.queries import not_found


def configure(parser: argparse.ArgumentParser) -> None:
    add_job(parser)
    add_source(parser)
    parser.add_argument(
        "--incarnation",
        type=int,
        help="which job of that name (1 = the first; default: the latest)",
    )
    parser.add_argument(
        "-o",
        "--output",
        choices=("text", "wide", "json", "yaml"),
        default="text",
        help="text; wide: with absolute times, pod names and decision ids; json/yaml: the "
        "API's timeline object (times RFC 3339)",
    )
    parser.epilog = exit_codes.READ_EPILOG


def run(args: argparse.Namespace) -> int:
    try:
        key = job_of(args)
        with open_queries(args) as queries:
            timeline = queries.timeline(key, incarnation=args.incarnation)
            incarnations = len(queries.incarnations(key))
    except UsageError as exc:
        return fail("timeline", exc)
    if timeline is None:
        print(
            f"lavalog timeline: {not_found(key, args.incarnation, incarnations)}",
            file=sys.stderr,
        )
        return exit_codes.NOT_FOUND
    if args.output in ("json", "yaml"):
        (write_json if args.output == "json" else write_yaml)(to_wire(timeline, Timeline))
    else:
        print(render_timeline(timeline, incarnations=incarnations, wide=args.output == "wide"))
    return exit_codes.OK
