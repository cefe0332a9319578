"""`lavalog events NAMESPACE/NAME [--follow]`: a job's audit trail, one event a line."""

from __future__ import annotations

import argparse
import sys
import time

import msgspec

from controller.commands.output import write_yaml_stream
from events.codec import decode_event
from projections.cli.common import UsageError, add_job, add_source, fail, open_queries
from projections.queries import Queries
from projections.render import describe_event

HELP = "print a job's events in log order (observations and decisions); --follow for new ones"


def configure(parser: argparse.ArgumentParser) -> None:
    add_job(parser)
    add_source(parser)
    parser.add_argument("-f", "--follow", action="store_true", help="keep printing new events")
    parser.add_argument("--interval", type=float, default=1.0, help="seconds between polls")
    parser.add_argument(
        "-o",
        "--output",
        choices=("text", "json", "yaml"),
        default="text",
        help="json: the events as stored, one a line (JSONL); yaml: the same as a YAML stream",
    )


def run(args: argparse.Namespace) -> int:
    if args.follow and args.file is not None:
        return fail("events", UsageError("--follow reads the store, not a --file"))
    try:
        with open_queries(args) as queries:
            last = _print(queries, args.job, 0, args.output)
            if not last and not args.follow:
                print(f"lavalog events: no events of {args.job}", file=sys.stderr)
                return 1
            while args.follow:
                time.sleep(args.interval)
                last = _print(queries, args.job, last, args.output)
    except UsageError as exc:
        return fail("events", exc)
    except (KeyboardInterrupt, BrokenPipeError):
        pass
    return 0


def _print(queries: Queries, key: str, after: int, output: str) -> int:
    """Print the events after `after`; returns the last sequence number printed."""
    events = queries.events(key, after=after)
    if output == "json":
        sys.stdout.buffer.writelines(stored.body + b"\n" for stored in events)
    elif output == "yaml" and events:
        write_yaml_stream(msgspec.json.decode(stored.body) for stored in events)
    else:
        for stored in events:
            print(f"{stored.seq:>8}  {describe_event(decode_event(stored.body))}")
    sys.stdout.flush()
    return events[-1].seq if events else after
