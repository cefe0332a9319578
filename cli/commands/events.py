"""`lavalog events [NAMESPACE/]NAME [--follow]`: a job's audit trail, one event a line."""

from __future__ import annotations

import argparse
import sys
import time

import msgspec

from lavalog.cli import exit_codes
from lavalog.cli.output import write_yaml_stream
from lavalog.cli.read_options import (
    Reader,
    UsageError,
    add_job,
    add_source,
    fail,
    job_of,
    open_queries,
)
from lavalog.events.codec import decode_event
from lavalog.projections.core.render import describe_event


def configure(parser: argparse.ArgumentParser) -> None:
    add_job(parser)
    add_source(parser)
    parser.add_argument("-f", "--follow", action="store_true", help="keep printing new events")
    parser.add_argument("--interval", type=float, default=1.0, help="seconds between polls")
    parser.add_argument(
        "-o",
        "--output",
        choices=("text", "wide", "json", "yaml"),
        default="text",
        help="text; wide: with each event's topic, id and job uid; json: the events as "
        "stored, one a line (JSONL); yaml: the same as a YAML stream",
    )
    parser.epilog = exit_codes.READ_EPILOG


def run(args: argparse.Namespace) -> int:
    if args.follow and args.file is not None:
        return fail("events", UsageError("--follow reads the store or a server, not a --file"))
    try:
        key = job_of(args)
        with open_queries(args) as queries:
            last = _print(queries, key, 0, args.output)
            if not last and not args.follow:
                print(f"lavalog events: no events of {key}", file=sys.stderr)
                return exit_codes.NOT_FOUND
            while args.follow:
                time.sleep(args.interval)
                last = _print(queries, key, last, args.output)
    except UsageError as exc:
        return fail("events", exc)
    except (KeyboardInterrupt, BrokenPipeError):
        pass
    return exit_codes.OK


def _print(queries: Reader, key: str, after: int, output: str) -> int:
    """Print the events after `after`; returns the last sequence number printed."""
    events = queries.events(key, after=after)
    if output == "json":
        sys.stdout.buffer.writelines(stored.body + b"\n" for stored in events)
    elif output == "yaml" and events:
        write_yaml_stream(msgspec.json.decode(stored.body) for stored in events)
    else:
        for stored in events:
            event = decode_event(stored.body)
            wide = f"{stored.kind:<9} {event.id}  {event.job_uid}  " if output == "wide" else ""
            print(f"{stored.seq:>8}  {wide}{describe_event(event)}")
    sys.stdout.flush()
    return events[-1].seq if events else after
