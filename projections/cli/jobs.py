"""`lavalog jobs`: the job list from the projections store, as a table, JSON or YAML."""

from __future__ import annotations

import argparse
import sys

from controller.commands.output import write_json, write_yaml
from events.durations import format_duration
from events.timestamps import to_rfc3339
from projections.cli.common import UsageError, add_source, fail, open_queries
from projections.queries import MAX_PAGE, JobFilter
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
    parser.add_argument(
        "--phase",
        action="append",
        default=[],
        help="only jobs in this phase (repeat, or comma-separate, for several)",
    )
    parser.add_argument("-s", "--search", default="", help="a substring of NAMESPACE/NAME")
    parser.add_argument(
        "--limit", type=page_size, default=500, help=f"at most this many jobs (1 to {MAX_PAGE:,})"
    )
    parser.add_argument("-o", "--output", choices=("table", "json", "yaml"), default="table")


def page_size(text: str) -> int:
    """`--limit`: the same range as the API's `limit`."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, not {text!r}") from None
    if not 1 <= value <= MAX_PAGE:
        raise argparse.ArgumentTypeError(f"expected 1 to {MAX_PAGE}, not {value}")
    return value


def run(args: argparse.Namespace) -> int:
    phases = tuple(phase for given in args.phase for phase in given.split(",") if phase)
    try:
        where = JobFilter(
            namespace=args.namespace, queue=args.queue, phases=phases, search=args.search
        )
        with open_queries(args) as queries:
            page = queries.jobs(where, limit=args.limit)
    except (UsageError, ValueError) as exc:
        return fail("jobs", exc)
    if args.output == "json":
        write_json(page.jobs)
    elif args.output == "yaml":
        write_yaml(page.jobs)
    elif not page.jobs:
        print("no jobs" + (" match" if where != JobFilter() else ""), file=sys.stderr)
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
