"""`lavalog run`: the controller against a cluster and a Kafka."""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys

from lavalog.cli.errors import KAFKA_FAILURES, kafka_failure
from lavalog.cli.kafka_options import add_kafka_arguments, kafka_settings
from lavalog.cli.lease_options import add_lease_arguments, lease_timing
from lavalog.controller.actuator.service.ratelimit import DEFAULT_BURST, DEFAULT_QPS
from lavalog.controller.app import (
    COMPONENTS,
    ControllerConfig,
    check_exposure,
    default_identity,
    run_controller,
)
from lavalog.controller.collector import collect_rarely
from lavalog.controller.event_loop import EventLoop, loop_factory
from lavalog.controller.kube import KUBECONFIG_HELP, KubeConfigError, choose_kubeconfig
from lavalog.controller.logs import add_logging_arguments, configure_logging
from lavalog.controller.task_stacks import log_task_stacks_on_sigusr1
from lavalog.events.observations import MAX_REQUEUE_NUM


def configure(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Watch Volcano Jobs and their pods, decide their lifecycle over Kafka and carry the "
        "decisions out. Every option defaults to its LAVALOG_* environment variable (the "
        "kubeconfig also to $KUBECONFIG, as kubectl's). Several "
        "replicas may run: they share the Kafka partitions, and only the leader (a Lease) "
        "watches the cluster. SIGTERM stops cleanly; SIGUSR1 logs where each task waits."
    )
    env = os.environ.get
    parser.add_argument("--kubeconfig", help=KUBECONFIG_HELP)
    parser.add_argument(
        "--namespace", default=env("LAVALOG_NAMESPACE"), help="watch one namespace (default: all)"
    )
    parser.add_argument(
        "--components",
        default=env("LAVALOG_COMPONENTS", ",".join(COMPONENTS)),
        help=f"comma-separated subset of {','.join(COMPONENTS)} to run in this process",
    )
    parser.add_argument(
        "--http-host",
        default=env("LAVALOG_HTTP_HOST", "127.0.0.1"),
        help="address of /healthz, /readyz and /metrics: this machine only by default; "
        "0.0.0.0 (every interface, with --kubernetes-auth only) in a pod, for the kubelet's "
        "probes and Prometheus",
    )
    parser.add_argument(
        "--http-port",
        type=int,
        default=int(env("LAVALOG_HTTP_PORT", "8080")),
        help="port of /healthz, /readyz and /metrics",
    )
    _add_switch(
        parser,
        "--kubernetes-auth",
        "LAVALOG_KUBERNETES_AUTH",
        help="answer /metrics only to a caller whose Kubernetes bearer token (TokenReview) "
        "RBAC lets get /metrics (SubjectAccessReview), as the projections do; /healthz and "
        "/readyz stay open. Without it --http-host must be a loopback address (env "
        "LAVALOG_KUBERNETES_AUTH=true; the manifests pass it)",
    )
    parser.add_argument(
        "--identity",
        default=env("LAVALOG_IDENTITY", default_identity()),
        help="this replica's name in the leader Lease and its consumer groups, unique per live "
        "process; a restart under the same name takes both back at once. In a pod it is the "
        "pod name (POD_NAME, else the hostname), elsewhere HOST-PID",
    )
    parser.add_argument(
        "--lease-namespace",
        default=env("LAVALOG_LEASE_NAMESPACE", "default"),
        help="namespace of the leader Lease",
    )
    parser.add_argument(
        "--kube-api-qps",
        type=float,
        metavar="QPS",
        default=env("LAVALOG_KUBE_API_QPS", str(DEFAULT_QPS)),
        help="API calls per second the actuator makes at most, on average (Volcano's flag; "
        "default %(default)s): see docs/install.md, 'Sizing the API budget'",
    )
    parser.add_argument(
        "--kube-api-burst",
        type=int,
        metavar="N",
        default=env("LAVALOG_KUBE_API_BURST", str(DEFAULT_BURST)),
        help="API calls the actuator may make at once above --kube-api-qps "
        "(Volcano's flag; default %(default)s)",
    )
    parser.add_argument(
        "--max-requeue-num",
        type=int,
        metavar="N",
        default=int(env("LAVALOG_MAX_REQUEUE_NUM", str(MAX_REQUEUE_NUM))),
        help="a job whose pod, PodGroup or claim creates the API server refuses (a full "
        "ResourceQuota) is retried, 5 ms later doubling each time, and terminated after this "
        "many retries in a row; negative: never (Volcano's flag; default %(default)s)",
    )
    _add_switch(
        parser,
        "--phase-events",
        "LAVALOG_PHASE_EVENTS",
        help="also record a Kubernetes Event on the Job for each phase change (reason: the "
        "new phase, e.g. 'Pending -> Running'); off by default, as Volcano records none on a "
        "job's way to Running and each costs an API call (env LAVALOG_PHASE_EVENTS=true)",
    )
    parser.add_argument(
        "--event-loop",
        type=EventLoop,
        choices=list(EventLoop),
        default=env("LAVALOG_EVENT_LOOP", EventLoop.AUTO),
        help="the asyncio event loop every component runs on: uvloop (libuv, compiled: the "
        "loop's own work on sockets, timers and callbacks; installed by pip install "
        "'lavalog[fast]' and in the image) or Python's own; auto takes uvloop when it is "
        "installed (default %(default)s)",
    )
    add_lease_arguments(parser)
    add_kafka_arguments(parser)
    add_logging_arguments(parser)


def _add_switch(parser: argparse.ArgumentParser, flag: str, variable: str, *, help: str) -> None:
    """`--flag`/`--no-flag`, by default on when `variable` is 1, true or yes."""
    on = os.environ.get(variable, "").strip().lower() in ("1", "true", "yes")
    parser.add_argument(flag, action=argparse.BooleanOptionalAction, default=on, help=help)


def run(args: argparse.Namespace) -> int:
    configure_logging(level=args.log_level, json=args.log_json)
    try:
        kafka = kafka_settings(args)
        if not (args.kube_api_qps > 0 and args.kube_api_burst > 0):
            raise ValueError("--kube-api-qps and --kube-api-burst must be above 0")
        lease = lease_timing(args)
        check_exposure(args.http_host, authenticated=args.kubernetes_auth)
        new_loop = loop_factory(args.event_loop)
    except ValueError as exc:
        print(f"lavalog run: {exc}", file=sys.stderr)
        return 2
    kubeconfig = choose_kubeconfig(args.kubeconfig)
    config = ControllerConfig(
        kafka=kafka,
        kubeconfig=kubeconfig.path,
        kubeconfig_origin=kubeconfig.origin,
        namespace=args.namespace,
        identity=args.identity,
        components=tuple(c.strip() for c in args.components.split(",") if c.strip()),
        http_host=args.http_host,
        http_port=args.http_port,
        kubernetes_auth=args.kubernetes_auth,
        lease_namespace=args.lease_namespace,
        qps=args.kube_api_qps,
        burst=args.kube_api_burst,
        max_requeues=args.max_requeue_num,
        phase_events=args.phase_events,
        lease=lease,
    )
    collect_rarely()
    with asyncio.Runner(loop_factory=new_loop) as runner:
        return runner.run(_main(config))


async def _main(config: ControllerConfig) -> int:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    log_task_stacks_on_sigusr1()
    try:
        await run_controller(config, stop=stop)
    except KAFKA_FAILURES as exc:
        print(f"lavalog run: {kafka_failure(exc, config.kafka.bootstrap_servers)}", file=sys.stderr)
        return 1
    except (KubeConfigError, RuntimeError, ValueError, OSError) as exc:
        print(f"lavalog run: {exc}", file=sys.stderr)
        return 1
    return 0
