"""`lavalog projections serve|rebuild`: run the projections service, or rebuild its store.

`serve` feeds the store from the topics (consumer group `lavalog-projections`) or from
a JSONL file and serves the API and web UI over it, until SIGTERM or SIGINT: then it
commits the batch in hand and closes the store. `rebuild` reads the topics (or a
file) from the beginning into a new store and swaps it in when complete, so a reader
never sees a half-built store.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import sys
from pathlib import Path

from aiokafka.errors import KafkaConnectionError

from controller.commands.errors import kafka_unreachable
from controller.kafka import KafkaSettings
from controller.logs import add_logging_arguments, configure_logging
from projections.app import serve
from projections.cli.common import UsageError, add_state_dir, location
from projections.cli.progress import ProgressBar
from projections.database import Location, NotLeader, StoreUnreachable
from projections.file_source import FileSource
from projections.kafka_source import GROUP_ID, KafkaSource
from projections.rebuild import BATCH, rebuild
from projections.runner import Source
from projections.shutdown import until_signalled
from projections.store import Store

HELP = "serve the projections API and web UI, or rebuild the projections store"


def configure(parser: argparse.ArgumentParser) -> None:
    commands = parser.add_subparsers(dest="action", required=True)
    style = parser.formatter_class
    serve_parser = commands.add_parser(
        "serve", help="feed the store and serve the API and UI", formatter_class=style
    )
    rebuild_parser = commands.add_parser(
        "rebuild", help="rebuild the store from the beginning", formatter_class=style
    )
    for sub in (serve_parser, rebuild_parser):
        add_state_dir(sub)
        sub.add_argument("--from-file", type=Path, help="a JSONL file instead of Kafka")
        sub.add_argument("--bootstrap-servers", help="Kafka (env LAVALOG_BOOTSTRAP_SERVERS)")
        sub.add_argument("--topic-prefix", help="topic name prefix (env LAVALOG_TOPIC_PREFIX)")
        sub.add_argument(
            "--retention",
            type=float,
            default=_env_float("LAVALOG_RETENTION_SECONDS"),
            help="forget finished jobs this many seconds after they end (default: keep)",
        )
        add_logging_arguments(sub)
    serve_parser.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (0.0.0.0: every interface)"
    )
    serve_parser.add_argument("--port", type=int, default=8080, help="port (0: any free one)")
    serve_parser.add_argument("--group-id", default=GROUP_ID, help="Kafka consumer group")


def run(args: argparse.Namespace) -> int:
    configure_logging(level=args.log_level, json=args.log_json)
    try:
        return _serve(args) if args.action == "serve" else _rebuild(args)
    except KafkaConnectionError:
        message = kafka_unreachable(_settings(args).bootstrap_servers)
        print(f"lavalog projections {args.action}: {message}", file=sys.stderr)
        return 1
    except (StoreUnreachable, NotLeader, UsageError) as exc:
        print(f"lavalog projections {args.action}: {exc}", file=sys.stderr)
        return 1


def _env_float(name: str) -> float | None:
    text = os.environ.get(name)
    return float(text) if text else None


def _settings(args: argparse.Namespace) -> KafkaSettings:
    settings = KafkaSettings.from_env()
    overrides = {
        name: value
        for name, value in (
            ("bootstrap_servers", args.bootstrap_servers),
            ("topic_prefix", args.topic_prefix),
        )
        if value is not None
    }
    return dataclasses.replace(settings, **overrides)


def _serve(args: argparse.Namespace) -> int:
    store: Location = location(args)
    source: Source = (
        FileSource(args.from_file)
        if args.from_file is not None
        else KafkaSource(_settings(args), group_id=args.group_id)
    )
    asyncio.run(
        until_signalled(
            serve(
                location=store,
                open_store=lambda: Store(store, retention=args.retention),
                source=source,
                host=args.host,
                port=args.port,
                started=lambda url: print(f"projections at {url}", flush=True),
            )
        )
    )
    return 0


def _rebuild(args: argparse.Namespace) -> int:
    final: Location = location(args)
    partial = final.staging()
    store = Store(partial, retention=args.retention, durable=False)
    source = (
        FileSource(args.from_file, batch_size=BATCH)
        if args.from_file is not None
        else KafkaSource(_settings(args), group_id=None, until_end=True, max_records=BATCH)
    )
    bar = ProgressBar()
    try:
        applied = asyncio.run(rebuild(store, source, progress=bar.update))
        bar.update(source.consumed, source.total, force=True)
    finally:
        bar.close()
        store.close()
    final.replace(partial)
    print(f"rebuilt {final}: {applied} events")
    return 0
