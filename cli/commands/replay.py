"""`lavalog replay FILE`: run the decider offline over recorded observations.

With `--serve` the replayed log (observations and recomputed decisions) is shown in the
projections web UI instead of printed: the same UI as `lavalog projections serve`, over a
store loaded from the log.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from lavalog.cli.output import write_yaml_stream
from lavalog.controller.decider.core import replay
from lavalog.controller.logs import configure_logging
from lavalog.events.codec import DecodeError, LogEvent, read_jsonl, write_jsonl
from lavalog.events.observations import AnyObservation, JobObserved, Observation
from lavalog.projections.core.render import render_replay


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
    serving.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on: a loopback one (the replay's server has no authentication)",
    )
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


def _observations(path: Path) -> Iterator[AnyObservation]:
    stream = sys.stdin.buffer if str(path) == "-" else path.open("rb")
    with stream:
        for event in read_jsonl(stream):
            if isinstance(event, Observation):
                yield event


def _serve(events: Sequence[LogEvent], args: argparse.Namespace) -> int:
    """Load `events` into a store (in `--state-dir`, else a temporary one, removed on exit)
    and serve it until SIGTERM or SIGINT."""
    # here, not at the top: printing a replay must not load the web app (aiohttp) and store
    from lavalog.projections.service.app import ServeError, serve
    from lavalog.projections.service.shutdown import until_signalled
    from lavalog.projections.service.sources.memory import MemorySource
    from lavalog.projections.service.store.sqlite import SqliteLocation
    from lavalog.projections.service.store.writer import Store, store_path

    configure_logging()
    name = str(args.file)
    with _directory(args.state_dir) as directory:
        store = store_path(directory)
        try:
            asyncio.run(
                until_signalled(
                    serve(
                        location=SqliteLocation(store),
                        open_store=lambda: Store(store),
                        source=MemorySource(events, name=f"replay:{name}"),
                        host=args.host,
                        port=args.port,
                        started=lambda url: print(
                            f"replayed {name}: timelines at {url} (no authentication: this"
                            " machine only)   (Ctrl-C to stop)",
                            flush=True,
                        ),
                    )
                )
            )
        except ServeError as exc:
            print(f"lavalog replay: {exc}", file=sys.stderr)
            return 2
    return 0


@contextmanager
def _directory(state_dir: Path | None) -> Iterator[Path]:
    if state_dir is not None:
        yield state_dir
        return
    with tempfile.TemporaryDirectory(prefix="lavalog-replay-") as scratch:
        yield Path(scratch)
