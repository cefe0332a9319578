"""`lavalog sim`: run the simulated cluster until interrupted.

Flags default to `LAVALOG_SIM_*` environment variables, so a demo script can set them
once. The kubeconfig written to `--kubeconfig` points kubectl and clients at it.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
from pathlib import Path

from lavalog.controller.collector import collect_rarely
from lavalog.simulator import vectors
from lavalog.simulator.faults import ApiFaults
from lavalog.simulator.server import DEFAULT_CAPACITY, SimulatedCluster


def _env(name: str, default: str) -> str:
    return os.environ.get(f"LAVALOG_SIM_{name}", default)


def _capacity(text: str) -> dict[str, str]:
    try:
        return vectors.parse_flag(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def configure(parser: argparse.ArgumentParser) -> None:
    default_capacity = ",".join(f"{k}={v}" for k, v in DEFAULT_CAPACITY.items())
    parser.add_argument(
        "--port",
        type=int,
        default=int(_env("PORT", "8080")),
        help="port on 127.0.0.1 (0 picks a free one)",
    )
    parser.add_argument(
        "--kubeconfig",
        type=Path,
        default=Path(_env("KUBECONFIG", "lavalog-sim.kubeconfig")),
        help="where to write a kubeconfig that points at the cluster",
    )
    parser.add_argument(
        "--nodes", type=int, default=int(_env("NODES", "2")), help="number of nodes"
    )
    parser.add_argument(
        "--node-capacity",
        type=_capacity,
        default=_capacity(_env("NODE_CAPACITY", default_capacity)),
        help="capacity of each node, e.g. cpu=8,memory=32Gi,nvidia.com/gpu=8",
    )
    parser.add_argument(
        "--time-scale",
        type=float,
        default=float(_env("TIME_SCALE", "1")),
        help="simulated seconds per real second",
    )
    parser.add_argument(
        "--default-run-seconds",
        type=float,
        default=float(_env("DEFAULT_RUN_SECONDS", "5")),
        help="how long a container with an unknown command runs",
    )
    parser.add_argument(
        "--history-size",
        type=int,
        default=int(_env("HISTORY_SIZE", "100000")),
        help="watch history kept; older resourceVersions answer 410 Gone",
    )
    parser.add_argument(
        "--latency",
        type=float,
        default=float(_env("LATENCY", "0")),
        help="seconds added to every API answer",
    )
    parser.add_argument(
        "--error-rate",
        type=float,
        default=float(_env("ERROR_RATE", "0")),
        help="share of API requests answered 500",
    )
    parser.add_argument(
        "--throttle-rate",
        type=float,
        default=float(_env("THROTTLE_RATE", "0")),
        help="share of API requests answered 429",
    )


def run(args: argparse.Namespace) -> int:
    # Hundreds of thousands of stored (acyclic) objects make the cyclic collector's full
    # passes dominate; collect as rarely as the controller does.
    collect_rarely()
    asyncio.run(_serve(args))
    return 0


async def _serve(args: argparse.Namespace) -> None:
    faults = ApiFaults(
        latency=args.latency, error_rate=args.error_rate, throttle_rate=args.throttle_rate
    )
    cluster = SimulatedCluster(
        nodes=args.nodes,
        node_capacity=args.node_capacity,
        time_scale=args.time_scale,
        port=args.port,
        kubeconfig_path=args.kubeconfig,
        history_size=args.history_size,
        default_run_seconds=args.default_run_seconds,
        api_faults=faults,
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    async with cluster:
        print(f"simulated cluster at {cluster.url} ({args.nodes} nodes)", flush=True)
        print(f"export KUBECONFIG={cluster.kubeconfig_path.resolve()}", flush=True)
        await stop.wait()
