"""`lavalog replay FILE`: run the decider offline over recorded observations.

With `--serve` the replayed log (observations and recomputed decisions) is shown in the
projections web UI instead of printed. The projections build on the controller (audit
runs the decider, `projections serve` reads Kafka with its settings), so the controller
does not import them: like the command table in `controller.cli`, this command hands
the log over by module name, and a controller-only installation says what is missing.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

from controller.commands.output import write_yaml_stream
from controller.decider import replay
from events.codec import DecodeError, LogEvent, read_jsonl, write_jsonl
from events.observations import AnyObservation, JobObserved, Observation
from projections.core.render import render_replay

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
        choices=("text", "json", "yaml"),
        default="text",
        help="text: readable timelines; json: the observations and decisions as JSONL; "
        "yaml: the same as a YAML stream",
    )
    parser.add_argument(
        "--pods", action="store_true", help="also show pod creations and kills (text output)"
    )
    serving = parser.add_argument_group("serving the timelines in the web UI")
    serving.add_argument(
        "--serve",
        action="store_true",
        help="instead of printing, serve the replayed log's timelines (projections API and "
        "web UI) until Ctrl-C",
    )
    serving.add_argument("--host", default="127.0.0.1", help="address to listen on")
    serving.add_argument("--port", type=int, default=8080, help="port (0: any free one)")
    serving.add_argument(
        "--state-dir",
        type=Path,
        default=None,
        help="keep the projections store in this directory (None: a temporary one, removed "
        "on exit)",
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
    if args.serve:
        return _serve([e for observation, ds in steps for e in (observation, *ds)], args)
    if args.output == "json":
        for observation, decisions in steps:
            sys.stdout.buffer.writelines(write_jsonl([observation, *decisions]))
    elif args.output == "yaml":
        write_yaml_stream(event for observation, ds in steps for event in (observation, *ds))
    else:
        print(render_replay(steps, pods=args.pods))
    return 0


#: where the serving lives (see the module's docstring)
SERVE_MODULE = "projections.cli.replay"


def _serve(events: list[LogEvent], args: argparse.Namespace) -> int:
    try:
        module = importlib.import_module(SERVE_MODULE)
    except ModuleNotFoundError as exc:
        print(f"lavalog replay --serve: needs the projections ({exc})", file=sys.stderr)
        return 1
    serve_replayed: Callable[..., int] = module.serve_replayed
    return serve_replayed(
        events,
        name=str(args.file),
        state_dir=args.state_dir,
        host=args.host,
        port=args.port,
    )


def _observations(path: Path) -> Iterator[AnyObservation]:
    stream = sys.stdin.buffer if str(path) == "-" else path.open("rb")
    with stream:
        for event in read_jsonl(stream):
            if isinstance(event, Observation):
                yield event
