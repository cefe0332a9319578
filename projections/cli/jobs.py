"""`lavalog jobs`: the job list from the projections store, as a table, JSON or YAML."""

from __future__ import annotations

import argparse
import json

import msgspec
import yaml

from events.durations import format_duration
from events.timestamps import to_rfc3339
from projections.cli.common import UsageError, add_source, fail, open_queries
from projections.queries import JobFilter
from projections.summary import JobSummary

HELP = "list jobs with their phase, retries and restarts (from the projections store)"

COLUMNS = (
    "NAMESPACE",
    "NAME",
    "QUEUE",
    "PHASE",
    "RETRIES",
    "PODS",
    "RESTARTS",
    "SUBMITTED",
    "QUEUE WAIT",
    "RUN TIME",
)


def configure(parser: argparse.ArgumentParser) -> None:
    add_source(parser)
    parser.add_argument("-n", "--namespace", default="", help="only this namespace")
    parser.add_argument("--queue", default="", help="only this queue")
    parser.add_argument("--phase", action="append", default=[], help="only these phases")
    parser.add_argument("-s", "--search", default="", help="a substring of NAMESPACE/NAME")
    parser.add_argument("--limit", type=int, default=500, help="at most this many jobs")
    parser.add_argument("-o", "--output", choices=("table", "json", "yaml"), default="table")


def run(args: argparse.Namespace) -> int:
    where = JobFilter(
        namespace=args.namespace, queue=args.queue, phases=tuple(args.phase), search=args.search
    )
    try:
        with open_queries(args) as queries:
            page = queries.jobs(where, limit=args.limit)
    except UsageError as exc:
        return fail("jobs", exc)
    rows = msgspec.to_builtins(page.jobs)
    if args.output == "json":
        print(json.dumps(rows, indent=2))
    elif args.output == "yaml":
        print(yaml.safe_dump(rows, sort_keys=False), end="")
    else:
        print(table(page.jobs))
        if page.next is not None:
            print(f"... {page.total - len(page.jobs)} more (raise --limit)")
    return 0


def table(jobs: tuple[JobSummary, ...]) -> str:
    cells = [COLUMNS] + [
        (
            job.namespace,
            job.name + (f" #{job.incarnation}" if job.incarnation > 1 else ""),
            job.queue,
            job.phase or "-",
            str(job.retry_count),
            str(job.pods),
            str(job.restarts),
            to_rfc3339(job.submitted) if job.submitted is not None else "-",
            format_duration(round(job.queue_wait)) if job.queue_wait is not None else "-",
            format_duration(round(job.run_time)),
        )
        for job in jobs
    ]
    widths = [max(len(row[i]) for row in cells) for i in range(len(COLUMNS))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in cells
    )
