"""`lavalog broker`: the development broker alone, in the foreground until Ctrl-C or SIGTERM."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import signal
import sys

from lavalog.controller.broker import BrokerStartError, DevelopmentBroker
from lavalog.controller.kafka import KafkaSettings, ensure_topics, topic_specs


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--port",
        type=int,
        default=int(os.environ.get("LAVALOG_BROKER_PORT", "9092")),
        help="TCP port on 127.0.0.1; 0 picks a free one (env LAVALOG_BROKER_PORT)",
    )
    parser.add_argument(
        "--create-topics",
        action="store_true",
        help="create lavalog's topics, with the partition counts and topic prefix "
        "of the LAVALOG_* environment (see docs/kafka.md)",
    )
    parser.add_argument(
        "--startup-timeout", type=float, default=30.0, help="seconds to wait for the broker"
    )


def run(args: argparse.Namespace) -> int:
    try:
        return asyncio.run(_serve(args))
    except BrokerStartError as exc:
        print(f"lavalog broker: {exc}", file=sys.stderr)
        return 1


async def _serve(args: argparse.Namespace) -> int:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    broker = DevelopmentBroker(port=args.port or None, startup_timeout=args.startup_timeout)
    async with broker:
        print(f"bootstrap servers: {broker.bootstrap_servers}", flush=True)
        if args.create_topics:
            settings = dataclasses.replace(
                KafkaSettings.from_env(), bootstrap_servers=broker.bootstrap_servers
            )
            await ensure_topics(settings)
            names = ", ".join(spec.name for spec in topic_specs(settings))
            print(f"topics: {names}", flush=True)
        print("press Ctrl-C to stop", flush=True)
        stopped = asyncio.create_task(stop.wait())
        exited = asyncio.create_task(broker.wait())
        await asyncio.wait({stopped, exited}, return_when=asyncio.FIRST_COMPLETED)
        if exited.done():
            print(f"lavalog broker: the broker exited with code {exited.result()}", file=sys.stderr)
            return 1
        stopped.cancel()
    # The broker is stopped; its waiting thread has seen it exit.
    await exited
    return 0
