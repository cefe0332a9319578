"""The child side of `bench.harness.controller_processes`: `run_controller` in this process.

It prints its /metrics port, then runs until SIGTERM. `--source` is the checkout whose
`lavalog` it runs (this one, or another commit's to compare with), so nothing of lavalog
is imported before it is on the path. Its rate limit and lease timing are the
benchmarks' (`--lease`), not `lavalog run`'s defaults.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import signal
import sys
from collections.abc import Callable


def main(args: argparse.Namespace) -> None:
    sys.path.insert(0, args.source)
    from bench.harness import kafka_settings, say
    from lavalog.controller.app import ControllerConfig, run_controller
    from lavalog.controller.logs import configure_logging
    from lavalog.controller.task_stacks import log_task_stacks_on_sigusr1
    from lavalog.controller.watchers.core.lease import LeaseTiming

    configure_logging(level="warning", json=False)
    config = ControllerConfig(
        kafka=dataclasses.replace(
            kafka_settings(args.bootstrap, args.partitions),
            **({"fetch_max_wait_ms": args.fetch_max_wait_ms} if args.fetch_max_wait_ms else {}),
        ),
        kubeconfig=args.kubeconfig,
        http_host="127.0.0.1",
        http_port=0,
        lease=LeaseTiming.scaled(args.lease),
        qps=args.qps,
        burst=args.burst,
        components=tuple(args.components.split(",")),
        **({"identity": args.identity} if args.identity else {}),
    )

    async def controller() -> None:
        stop = asyncio.Event()
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
        log_task_stacks_on_sigusr1()  # `ControllerChild.log_task_stacks`: where tasks wait
        await run_controller(config, stop=stop, on_started=lambda _, port: say(str(port)))

    collect_rarely()
    with asyncio.Runner(loop_factory=new_loop(args.event_loop)) as runner:
        runner.run(controller())


def collect_rarely() -> None:
    """The product's collector settings (`lavalog run` sets them); a commit from before
    them has no such module and runs at CPython's defaults."""
    try:
        from lavalog.controller.collector import collect_rarely as product_setting
    except ImportError:
        return
    product_setting()


def new_loop(choice: str) -> Callable[[], asyncio.AbstractEventLoop] | None:
    """The product's choice of loop; asyncio's needs nothing of it (a commit from before
    `--event-loop` has no such module)."""
    if choice == "asyncio":
        return None
    from lavalog.controller.event_loop import EventLoop, loop_factory

    return loop_factory(EventLoop(choice))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="the controller, for `controller_processes`")
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--partitions", type=int, required=True)
    parser.add_argument("--qps", type=float, required=True)
    parser.add_argument("--burst", type=int, required=True)
    parser.add_argument("--event-loop", default="auto")
    parser.add_argument("--components", default="watchers,decider,actuator")
    parser.add_argument("--identity")
    parser.add_argument("--lease", type=float, default=5.0, help="Lease duration, seconds")
    parser.add_argument("--fetch-max-wait-ms", type=int, help="default: the settings' own")
    parser.add_argument("--source", required=True, help="the checkout whose lavalog to run")
    main(parser.parse_args())
