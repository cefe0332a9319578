"""`lavalog export [NAMESPACE/]NAME > job.jsonl`: every stored event of a job, byte for byte."""

from __future__ import annotations

import argparse
import sys

from lavalog.cli import exit_codes
from lavalog.cli.read_options import UsageError, add_job, add_source, fail, job_of, open_queries


def configure(parser: argparse.ArgumentParser) -> None:
    add_job(parser)
    add_source(parser)
    parser.epilog = exit_codes.READ_EPILOG


def run(args: argparse.Namespace) -> int:
    try:
        key = job_of(args)
        with open_queries(args) as queries:
            events = queries.events(key)
    except UsageError as exc:
        return fail("export", exc)
    if not events:
        print(f"lavalog export: no events of {key}", file=sys.stderr)
        return exit_codes.NOT_FOUND
    sys.stdout.buffer.writelines(event.body + b"\n" for event in events)
    return exit_codes.OK
