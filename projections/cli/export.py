"""`lavalog export NAMESPACE/NAME > job.jsonl`: every stored event of a job, byte for byte."""

from __future__ import annotations

import argparse
import sys

from projections.cli.common import UsageError, add_job, add_source, fail, open_queries

HELP = "write every event of a job (all incarnations) as JSONL, in log order"


def configure(parser: argparse.ArgumentParser) -> None:
    add_job(parser)
    add_source(parser)


def run(args: argparse.Namespace) -> int:
    try:
        with open_queries(args) as queries:
            events = queries.events(args.job)
    except UsageError as exc:
        return fail("export", exc)
    if not events:
        print(f"lavalog export: no events of {args.job}", file=sys.stderr)
        return 1
    sys.stdout.buffer.writelines(event.body + b"\n" for event in events)
    return 0
