"""`lavalog jobs`: the job list from the projections store or API, as kubectl lists."""

from __future__ import annotations

import argparse
import sys

from lavalog.cli import exit_codes
from lavalog.cli.output import write_json, write_yaml
from lavalog.cli.read_options import (
    UsageError,
    add_namespace,
    add_source,
    fail,
    namespace_of,
    open_queries,
)
from lavalog.events.durations import format_duration
from lavalog.events.timestamps import to_rfc3339
from lavalog.projections.core.summary import JobSummary
from lavalog.projections.core.wire import time_text, to_wire
from lavalog.projections.service.store.queries import MAX_PAGE, JobFilter

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
#: `-o wide` adds these
WIDE_COLUMNS = ("REASON", "VERSION", "UPDATED", "FINISHED", "UID")


def configure(parser: argparse.ArgumentParser) -> None:
    add_source(parser)
    add_namespace(parser, all_namespaces=True)
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
    parser.add_argument(
        "-o",
        "--output",
        choices=("table", "wide", "json", "yaml"),
        default="table",
        help="table; wide: more columns; json/yaml: the API's job objects (times RFC 3339)",
    )
    parser.epilog = exit_codes.READ_EPILOG


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
        namespace = namespace_of(args)
        where = JobFilter(namespace=namespace, queue=args.queue, phases=phases, search=args.search)
        with open_queries(args) as queries:
            page = queries.jobs(where, limit=args.limit)
    except (UsageError, ValueError) as exc:
        return fail("jobs", exc)
    if args.output in ("json", "yaml"):
        jobs = to_wire(page.jobs, tuple[JobSummary, ...])
        (write_json if args.output == "json" else write_yaml)(jobs)
    elif not page.jobs:
        filtered = where != JobFilter(namespace=namespace)
        in_namespace = f" in namespace {namespace} (-A: every namespace)" if namespace else ""
        print(("no jobs match" if filtered else "no jobs") + in_namespace, file=sys.stderr)
    else:
        print(table(page.jobs, wide=args.output == "wide"))
        if page.next is not None:
            print(f"... {page.total - len(page.jobs)} more (raise --limit)")
    return exit_codes.OK


def table(jobs: tuple[JobSummary, ...], *, wide: bool = False) -> str:
    header = COLUMNS + WIDE_COLUMNS if wide else COLUMNS
    cells = [header] + [_row(job, wide) for job in jobs]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in cells
    )


def _row(job: JobSummary, wide: bool) -> tuple[str, ...]:
    row = (
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
    if not wide:
        return row
    return (
        *row,
        job.reason or "-",
        str(job.version),
        time_text(job.updated),
        time_text(job.finished) if job.finished is not None else "-",
        job.uid,
    )
