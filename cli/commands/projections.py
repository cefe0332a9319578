"""`lavalog projections serve|rebuild`: run the projections service, or rebuild its store.

`serve` feeds the store from the topics (consumer group `lavalog-projections`) or from
a JSONL file and serves the API and web UI over it, until SIGTERM or SIGINT: then it
commits the batch in hand and closes the store. Who may read what: with
`--kubernetes-auth`, each caller's own Kubernetes token, reviewed by the API server, and
only the namespaces where RBAC lets them `get` Volcano Jobs; with `--token-file`, one
shared token (development); with neither, anyone on this machine, and only this machine.
`rebuild` reads the topics (or a file) from the beginning into a new store and swaps it
in when complete, so a reader never sees a half-built store.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from contextlib import AsyncExitStack
from pathlib import Path

from lavalog.cli.errors import KAFKA_FAILURES, kafka_failure
from lavalog.cli.kafka_options import add_kafka_arguments, kafka_settings
from lavalog.cli.progress import ProgressBar
from lavalog.cli.read_options import UsageError, add_state_dir, location
from lavalog.controller.auth.kubernetes import KubernetesAuth
from lavalog.controller.auth.middleware import Authenticator
from lavalog.controller.collector import collect_rarely
from lavalog.controller.kafka import KafkaSettings
from lavalog.controller.kafka.probe import check_connection
from lavalog.controller.kafka.security import connection_options
from lavalog.controller.kube import KUBECONFIG_HELP, KubeConfigError, choose_kubeconfig, connect
from lavalog.controller.logs import add_logging_arguments, configure_logging
from lavalog.controller.version import version
from lavalog.projections.service.app import ServeError, check_exposure, serve
from lavalog.projections.service.http.auth import SharedToken, TokenFile
from lavalog.projections.service.live import MAX_STREAMS
from lavalog.projections.service.rebuild import BATCH, rebuild
from lavalog.projections.service.runner import Source
from lavalog.projections.service.shutdown import until_signalled
from lavalog.projections.service.sources.file import FileSource
from lavalog.projections.service.sources.kafka import GROUP_ID, KafkaSource
from lavalog.projections.service.store.database import Location, NotLeader, StoreUnreachable
from lavalog.projections.service.store.writer import Store

TOKEN_FILE_ENV = "LAVALOG_API_TOKEN_FILE"
KUBERNETES_AUTH_ENV = "LAVALOG_KUBERNETES_AUTH"


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
        sub.add_argument(
            "--retention",
            type=float,
            default=_env_float("LAVALOG_RETENTION_SECONDS"),
            help="forget finished jobs this many seconds after they end (default: keep; env"
            " LAVALOG_RETENTION_SECONDS)",
        )
        add_kafka_arguments(sub)
        add_logging_arguments(sub)
    serve_parser.add_argument(
        "--host",
        default=os.environ.get("LAVALOG_HTTP_HOST", "127.0.0.1"),
        help="address to listen on, env LAVALOG_HTTP_HOST (0.0.0.0: every interface, as in a pod)",
    )
    serve_parser.add_argument(
        "--port",
        type=int,
        default=int(os.environ.get("LAVALOG_HTTP_PORT", "8080")),
        help="port, env LAVALOG_HTTP_PORT (0: any free one)",
    )
    who = serve_parser.add_mutually_exclusive_group()
    who.add_argument(
        "--kubernetes-auth",
        action="store_true",
        default=os.environ.get(KUBERNETES_AUTH_ENV, "").lower() in ("1", "true", "yes"),
        help="require each caller's Kubernetes bearer token (TokenReview) and serve them the"
        " jobs of the namespaces where RBAC lets them get jobs.batch.volcano.sh"
        " (SubjectAccessReview), /metrics only if it lets them get that path; health and"
        f" readiness stay open (env {KUBERNETES_AUTH_ENV}=true)",
    )
    who.add_argument(
        "--token-file",
        type=Path,
        default=os.environ.get(TOKEN_FILE_ENV) or None,
        help=f"development: require the one token in this file (a mounted Secret; re-read "
        f"when it changes) for the API and the UI, as `Authorization: Bearer TOKEN`; health, "
        f"readiness and metrics stay open (env {TOKEN_FILE_ENV})",
    )
    serve_parser.add_argument(
        "--kubeconfig",
        help=f"with --kubernetes-auth, the cluster that reviews tokens: {KUBECONFIG_HELP}",
    )
    serve_parser.add_argument(
        "--max-streams",
        type=int,
        default=MAX_STREAMS,
        help="event streams (/api/v1/stream) open at once; one more is answered 503",
    )
    serve_parser.add_argument("--group-id", default=GROUP_ID, help="Kafka consumer group")


def run(args: argparse.Namespace) -> int:
    configure_logging(level=args.log_level, json=args.log_json)
    command = f"lavalog projections {args.action}"
    try:  # what the user gave: bad values are exit code 2
        settings = kafka_settings(args)
        token_file = getattr(args, "token_file", None)
        token = TokenFile(token_file) if token_file is not None else None
        if args.from_file is None:
            connection_options(settings)  # TLS files that cannot be read
        elif not args.from_file.is_file():
            raise ValueError(f"--from-file {args.from_file}: no such file")
        if args.action == "serve":
            if token is not None and args.kubernetes_auth:  # both from the environment
                raise ValueError(
                    f"{KUBERNETES_AUTH_ENV} and {TOKEN_FILE_ENV} are both set: choose one way"
                    " to authenticate"
                )
            check_exposure(args.host, authenticated=token is not None or args.kubernetes_auth)
    except (ValueError, ServeError) as exc:
        print(f"{command}: {exc}", file=sys.stderr)
        return 2
    if args.action == "serve":  # a long-running process, like `lavalog run`
        collect_rarely()
    try:
        if args.from_file is None:
            asyncio.run(check_connection(settings))
        if args.action == "serve":
            return _serve(args, settings, token)
        return _rebuild(args, settings)
    except KAFKA_FAILURES as exc:
        print(f"{command}: {kafka_failure(exc, settings.bootstrap_servers)}", file=sys.stderr)
        return 1
    except (StoreUnreachable, NotLeader, UsageError, ServeError, KubeConfigError) as exc:
        print(f"lavalog projections {args.action}: {exc}", file=sys.stderr)
        return 1


#: how the projections introduce themselves to the API server (its audit log)
CLIENT = "lavalog-projections"


def _env_float(name: str) -> float | None:
    text = os.environ.get(name)
    return float(text) if text else None


def _serve(args: argparse.Namespace, settings: KafkaSettings, token: TokenFile | None) -> int:
    store: Location = location(args)
    source: Source = (
        FileSource(args.from_file)
        if args.from_file is not None
        else KafkaSource(settings, group_id=args.group_id)
    )

    async def serving() -> None:
        async with AsyncExitStack() as stack:
            authenticator: Authenticator | None = None
            who = "no authentication: this machine only"
            if args.kubernetes_auth:
                kubeconfig = choose_kubeconfig(args.kubeconfig)
                kube = await stack.enter_async_context(
                    connect(kubeconfig.path, origin=kubeconfig.origin, client=CLIENT)
                )
                authenticator = KubernetesAuth(kube)
                who = f"Kubernetes tokens and RBAC, reviewed by {kubeconfig.origin}"
            elif token is not None:
                authenticator = SharedToken(token)
                who = "the token of --token-file"
            await serve(
                location=store,
                open_store=lambda: Store(store, retention=args.retention),
                source=source,
                host=args.host,
                port=args.port,
                authenticator=authenticator,
                max_streams=args.max_streams,
                version=version(),
                started=lambda url: print(f"projections at {url} ({who})", flush=True),
            )

    asyncio.run(until_signalled(serving()))
    return 0


def _rebuild(args: argparse.Namespace, settings: KafkaSettings) -> int:
    final: Location = location(args)
    partial = final.staging()
    store = Store(partial, retention=args.retention, durable=False)
    source = (
        FileSource(args.from_file, batch_size=BATCH)
        if args.from_file is not None
        else KafkaSource(settings, group_id=None, until_end=True, max_records=BATCH)
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
