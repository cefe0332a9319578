"""`lavalog whatif NAMESPACE/NAME --set spec.maxRetry=5`: the job's history under another spec.

Replays the job's recorded observations with the changed spec, shows the recorded and
the alternative decisions side by side up to the first divergence, and after it only
what the record still tells (the old run's later pod failures). `--all` summarises
every job in the store. Exit code 0: identical; 1: the decisions diverge; 2: bad input.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from lavalog.cli.output import write_json
from lavalog.cli.read_options import Reader, UsageError, add_source, fail, job_key, open_queries
from lavalog.controller.decider.core import replay
from lavalog.events.codec import LogEvent, decode_event
from lavalog.projections.core.whatif import SpecChange, Summary, WhatIf, compose, parse_set, whatif


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "job", type=job_key, nargs="?", metavar="NAMESPACE/NAME", help="the job (or --all)"
    )
    parser.add_argument("--all", action="store_true", help="every job in the store, summarised")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="spec.PATH=VALUE",
        help=(
            "change one spec field (JSON value), e.g. spec.maxRetry=5, or one lavalog.io/"
            "annotation (text), e.g. 'metadata.annotations.lavalog.io/exit-codes.0=In 1,137'"
            " or metadata.annotations.lavalog.io/restart-backoff=10s,2,5m; repeatable"
        ),
    )
    parser.add_argument("--spec", type=Path, help="a JSON file with the whole alternative spec")
    parser.add_argument("--namespace", help="with --all: only this namespace")
    parser.add_argument(
        "--since",
        type=duration,
        help="with --all: only jobs with events in the last DURATION (30m, 2h, 7d)",
    )
    add_source(parser)
    parser.add_argument("-o", "--output", choices=("text", "json"), default="text")


def run(args: argparse.Namespace) -> int:
    try:
        change = _change(args)
        if args.all == (args.job is not None):
            raise UsageError("name one job or give --all")
        with open_queries(args) as queries:
            if args.all:
                summary = summarise(queries, change, since=args.since, namespace=args.namespace)
            else:
                events = [decode_event(stored.body) for stored in queries.events(args.job)]
                if not events:
                    raise UsageError(f"no events of {args.job}")
                report = whatif(events, replay, change)
    except (UsageError, ValueError, OSError) as exc:
        return fail("whatif", UsageError(str(exc)))
    if args.all:
        if args.output == "json":
            write_json(summary)
        else:
            print(render_summary(summary))
        return 0 if summary.diverged == 0 else 1
    if args.output == "json":
        write_json(report)
    else:
        print(render(report))
    return 0 if report.identical else 1


def duration(text: str) -> float:
    """`90s`, `30m`, `2h`, `7d` as seconds."""
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400}
    try:
        return float(text[:-1]) * units[text[-1]]
    except (KeyError, ValueError, IndexError):
        raise argparse.ArgumentTypeError(f"bad duration {text!r}: use e.g. 30m, 2h, 7d") from None


def _change(args: argparse.Namespace) -> SpecChange:
    changes = [parse_set(text) for text in args.set]
    if args.spec is not None:
        whole = json.loads(args.spec.read_text())
        changes.insert(0, lambda manifest: {**manifest, "spec": dict(whole)})
    if not changes:
        raise UsageError("give --set or --spec")
    return compose(changes)


def summarise(
    queries: Reader,
    change: SpecChange,
    *,
    since: float | None = None,
    namespace: str | None = None,
) -> Summary:
    """The what-if of every job in the store (in `namespace`, seen since `since` seconds ago)."""
    stored = queries.keys()
    keys = [k for k in stored if namespace is None or k.split("/", 1)[0] == namespace]
    summary = Summary()
    progress = sys.stderr.isatty()
    for count, key in enumerate(keys, 1):
        events: list[LogEvent] = [decode_event(stored.body) for stored in queries.events(key)]
        if since is not None and (not events or events[-1].time < time.time() - since):
            continue
        if events:
            summary.add(whatif(events, replay, change))
        if progress and (count % 100 == 0 or count == len(keys)):
            done = count * 30 // len(keys)
            bar = "#" * done + "." * (30 - done)
            print(f"\rwhatif [{bar}] {count}/{len(keys)} jobs", end="", file=sys.stderr)
    if progress:
        print(file=sys.stderr)
    return summary


def render_summary(summary: Summary) -> str:
    return (
        f"{summary.jobs} jobs: {summary.diverged} decided differently, {summary.other_phase} "
        f"in another phase, {summary.more_restarts} with more restarts, "
        f"{summary.fewer_restarts} with fewer; pod-hours saved {summary.pod_hours_saved:.2f}, "
        f"spent {summary.pod_hours_spent:.2f} (estimates from the recorded run times)"
    )


def render(report: WhatIf) -> str:
    lines = [f"what if {report.key} (baseline: {report.baseline} decisions)"]
    lines.append(f"{'time':>14}  {'fact':<45} {'recorded':<40} alternative")
    for step in report.steps:
        mark = "!" if step.observation == report.divergence else " "
        lines.append(
            f"{step.time:>14.1f}{mark} {step.fact:<45} "
            f"{','.join(step.recorded) or '-':<40} {','.join(step.alternative) or '-'}"
        )
    if report.identical:
        lines.append(f"identical: the change decides nothing differently ({report.recorded_phase})")
        return "\n".join(lines)
    lines.append(
        f"diverges at {report.divergence}: recorded ends {report.recorded_phase} after "
        f"{report.recorded_restarts} restart(s); the alternative is {report.alternative_phase}"
        f" there after {report.alternative_restarts}, and unknown beyond"
    )
    if report.recorded_why:
        lines.append(f"  recorded, why: {report.recorded_why}")
    if report.alternative_why:
        lines.append(f"  alternative, why: {report.alternative_why}")
    for known in report.known_after:
        container = f" in {known.container}" if known.container else ""
        lines.append(
            f"known from the old run: {known.pod} failed at {known.time:.1f} "
            f"(exit {known.exit_code}{container}, {known.reason or 'no reason'})"
        )
    return "\n".join(lines)
