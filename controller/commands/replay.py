"""`lavalog replay FILE`: run the decider offline over recorded observations."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from pathlib import Path

from controller.decider import replay
from controller.replay_report import render_timelines
from events.codec import DecodeError, read_jsonl, write_jsonl
from events.observations import AnyObservation, JobObserved, Observation

HELP = "replay a JSONL file of observations through the decider and print what it decides"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Read observations (one JSON object per line, as on lavalog.observed; decisions in "
        "the file are skipped and recomputed), run the lifecycle state machine over them and "
        "print each job's phase timeline with the actions taken and why."
    )
    parser.add_argument("file", type=Path, help="JSONL file of observations ('-' for stdin)")
    parser.add_argument(
        "-o",
        "--output",
        choices=("text", "json"),
        default="text",
        help="text: readable timelines; json: the observations and decisions as JSONL",
    )
    parser.add_argument(
        "--pods", action="store_true", help="also show pod creations and kills (text output)"
    )


def run(args: argparse.Namespace) -> int:
    try:
        observations = list(_observations(args.file))
    except (OSError, DecodeError) as exc:
        print(f"lavalog replay: {args.file}: {exc}", file=sys.stderr)
        return 1
    if not any(isinstance(o, JobObserved) for o in observations):
        print(f"lavalog replay: {args.file}: no JobObserved event to replay", file=sys.stderr)
        return 1
    steps = list(replay(observations))
    if args.output == "json":
        for observation, decisions in steps:
            sys.stdout.buffer.writelines(write_jsonl([observation, *decisions]))
    else:
        print(render_timelines(steps, pods=args.pods))
    return 0


def _observations(path: Path) -> Iterator[AnyObservation]:
    stream = sys.stdin.buffer if str(path) == "-" else path.open("rb")
    with stream:
        for event in read_jsonl(stream):
            if isinstance(event, Observation):
                yield event
