"""`lavalog audit NAMESPACE/NAME`: prove the recorded decisions from the recorded facts.

Recomputes every decision of the job (every job, without a name) from its observations
with the state machine and lists each decision that differs from the recorded one. A log
recorded before the decider recorded its admissions is read with them supplied
(`with_admissions`). Exit code 0: the log is consistent; 1: there are differences.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable

from lavalog.cli.output import write_json, write_yaml
from lavalog.cli.read_options import UsageError, add_source, fail, job_key, open_queries
from lavalog.controller.decider.core import replay
from lavalog.controller.decider.core.admission import with_admissions
from lavalog.events.codec import LogEvent, decode_event
from lavalog.projections.core.audit import AuditReport, Difference, Kind, audit
from lavalog.projections.service.sources.file import read_file


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "job", type=job_key, nargs="?", metavar="NAMESPACE/NAME", help="the job (default: all)"
    )
    add_source(parser)
    parser.add_argument("-o", "--output", choices=("text", "json", "yaml"), default="text")
    parser.epilog = (
        "exit codes:\n  0: every decision recomputes as recorded\n  1: differences\n"
        "  2: no events, or bad usage\n  3: cannot read: no store, --server unreachable"
    )


def run(args: argparse.Namespace) -> int:
    try:
        report = audit(with_admissions(_events(args)), replay)
    except UsageError as exc:
        return fail("audit", exc)
    if not report.keys:
        print(f"lavalog audit: no events of {args.job or 'any job'}", file=sys.stderr)
        return 2
    if args.output == "json":
        write_json(report)
    elif args.output == "yaml":
        write_yaml(report)
    else:
        print(render_report(report))
    return 0 if report.ok else 1


def _events(args: argparse.Namespace) -> list[LogEvent]:
    if args.file is not None and args.file.is_file():
        return [
            item.event
            for item in read_file(args.file)
            if args.job is None or item.event.key == args.job
        ]
    with open_queries(args) as queries:
        keys = [args.job] if args.job else queries.keys()
        return [decode_event(stored.body) for key in keys for stored in queries.events(key)]


def render_report(report: AuditReport) -> str:
    verdict = "consistent" if report.ok else f"{len(report.differences)} difference(s)"
    lines = [
        f"audited {', '.join(report.keys)}: {report.observations} observations, "
        f"{report.recorded} decisions recorded, {report.recomputed} recomputed: {verdict}"
    ]
    lines += [_line(difference) for difference in report.differences]
    return "\n".join(lines)


def _line(d: Difference) -> str:
    head = f"{d.kind.value.upper():<10} {d.id}  {d.type} (cause {d.cause})"
    if d.kind is Kind.MISSING:
        return f"{head}: the state machine decides it, the log does not have it"
    if d.kind is Kind.UNEXPECTED:
        return f"{head}: on the log, but the state machine does not decide it"
    assert d.recorded is not None and d.recomputed is not None
    changes: Iterable[str] = (
        f"{name} recorded {d.recorded.get(name)!r}, recomputed {d.recomputed.get(name)!r}"
        for name in d.fields
    )
    return f"{head}: " + "; ".join(changes)
