"""Options and helpers shared by the commands that read the projections (jobs, timeline,
events, export, audit, whatif; `projections` for its store): where to read (a store, a
file or a server), which namespace, how to fail (cli/exit_codes.py)."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Protocol

import yaml

from lavalog.cli import exit_codes
from lavalog.events.topics import split_job_key
from lavalog.projections.core.summary import JobSummary
from lavalog.projections.core.timeline import Timeline
from lavalog.projections.service.http.client import RemoteQueries, ServerRefused, ServerUnavailable
from lavalog.projections.service.sources.file import read_file
from lavalog.projections.service.store.database import Location, StoreUnreachable
from lavalog.projections.service.store.locations import store_location
from lavalog.projections.service.store.queries import JobFilter, Page, Queries, StoredEvent
from lavalog.projections.service.store.writer import Store, load

STATE_DIR_ENV = "LAVALOG_STATE_DIR"
STORE_ENV = "LAVALOG_STORE"
SERVER_ENV = "LAVALOG_SERVER"
TOKEN_FILE_ENV = "LAVALOG_API_TOKEN_FILE"


class UsageError(Exception):
    """A problem with what the user asked for: printed, exit code 2."""


class Unavailable(UsageError):
    """The data cannot be read (no store, no server): printed, exit code 3. A UsageError,
    so that every command that reports those reports this too; `fail` tells them apart."""


class Reader(Protocol):
    """What the read commands ask of a store (`Queries`) or a server (`RemoteQueries`)."""

    def jobs(self, where: JobFilter, *, limit: int = 50, after: str | None = None) -> Page: ...

    def timeline(self, key: str, *, incarnation: int | None = None) -> Timeline | None: ...

    def incarnations(self, key: str) -> list[JobSummary]: ...

    def events(self, key: str, *, after: int = 0, uid: str | None = None) -> list[StoredEvent]: ...

    def keys(self) -> list[str]: ...


def add_state_dir(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--state-dir",
        type=Path,
        default=Path(os.environ.get(STATE_DIR_ENV, "state")),
        help=f"directory of the projections store (env {STATE_DIR_ENV})",
    )
    parser.add_argument(
        "--store",
        default=os.environ.get(STORE_ENV) or None,
        metavar="URL",
        help="the projections store in PostgreSQL, e.g. postgresql://user:password@host/db,"
        f" instead of the SQLite file in --state-dir (env {STORE_ENV})",
    )


def location(args: argparse.Namespace) -> Location:
    """The store `--store` names, else the SQLite file in `--state-dir`."""
    try:
        return store_location(args.state_dir, args.store)
    except ValueError as exc:
        raise UsageError(f"--store: {exc}") from None


def add_source(parser: argparse.ArgumentParser) -> None:
    """`--state-dir`, `--file` or `--server`: the local store, a JSONL file read into a
    throwaway store, or a projections API."""
    add_state_dir(parser)
    parser.add_argument(
        "--file", type=Path, help="read this JSONL file of events instead of the store"
    )
    parser.add_argument(
        "--server",
        default=os.environ.get(SERVER_ENV) or None,
        help="read from this projections API (`lavalog projections serve`, e.g. "
        "http://127.0.0.1:8080 through kubectl port-forward) instead of a store "
        f"(env {SERVER_ENV})",
    )
    parser.add_argument(
        "--token-file",
        type=Path,
        default=os.environ.get(TOKEN_FILE_ENV) or None,
        help=f"the --server's bearer token, in a file (env {TOKEN_FILE_ENV})",
    )


def add_namespace(parser: argparse.ArgumentParser, *, all_namespaces: bool) -> None:
    """kubectl's `-n NAMESPACE` and, for lists, `-A`; without either, the namespace of the
    kubeconfig's current context, else `default`."""
    parser.add_argument(
        "-n",
        "--namespace",
        default="",
        help="the namespace (default: the kubeconfig context's, else default)",
    )
    if all_namespaces:
        parser.add_argument("-A", "--all-namespaces", action="store_true", help="every namespace")


def add_job(parser: argparse.ArgumentParser) -> None:
    """The job as `NAME` (in `-n`'s namespace) or `NAMESPACE/NAME`."""
    parser.add_argument("job", metavar="[NAMESPACE/]NAME", help="the job")
    add_namespace(parser, all_namespaces=False)


def namespace_of(args: argparse.Namespace) -> str:
    """The namespace the command is about; "" for every namespace (`-A`)."""
    if getattr(args, "all_namespaces", False):
        if args.namespace:
            raise UsageError("-A and -n together: choose one namespace or all")
        return ""
    return args.namespace or current_namespace()


def job_of(args: argparse.Namespace) -> str:
    """The job key from `NAME` and the namespace, or from `NAMESPACE/NAME`."""
    text: str = args.job
    if "/" not in text:
        text = f"{namespace_of(args)}/{text}"
    elif args.namespace and text.split("/", 1)[0] != args.namespace:
        raise UsageError(f"job {text} is not in namespace {args.namespace} (-n)")
    try:
        split_job_key(text)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    return text


def current_namespace() -> str:
    """kubectl's default namespace: the current context's in the kubeconfig, else `default`."""
    from lavalog.controller.kube import (
        choose_kubeconfig,  # only here: the kubernetes client is heavy
    )

    path = choose_kubeconfig(None).path
    try:
        with open(path or "", encoding="utf-8") as file:
            config = yaml.safe_load(file) or {}
        current = config.get("current-context")
        for context in config.get("contexts") or []:
            if context.get("name") == current:
                return str((context.get("context") or {}).get("namespace") or "default")
    except (OSError, yaml.YAMLError, AttributeError):
        pass  # no kubeconfig, or one kubectl would refuse too: kubectl's default
    return "default"


def job_key(text: str) -> str:
    try:
        split_job_key(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


@contextmanager
def open_queries(args: argparse.Namespace) -> Iterator[Reader]:
    """Queries over the store in `--state-dir`, over `--file` loaded into a temporary one,
    or over the API at `--server`."""
    server = getattr(args, "server", None)
    if server is not None:
        if getattr(args, "file", None) is not None:
            raise UsageError("--server and --file: read one or the other")
        token = _token(args.token_file) if args.token_file is not None else None
        try:
            yield RemoteQueries(server, token=token)
        except ServerRefused as exc:
            raise UsageError(str(exc)) from None
        except ServerUnavailable as exc:
            raise Unavailable(str(exc)) from None
        return
    if getattr(args, "file", None) is not None:
        if not args.file.is_file():
            raise UsageError(f"no file {args.file}")
        with tempfile.TemporaryDirectory(prefix="lavalog-") as scratch:
            store = Store(Path(scratch) / "projections.sqlite")
            load(store, read_file(args.file))
            store.close()
            queries = Queries(Path(scratch) / "projections.sqlite")
            try:
                yield queries
            finally:
                queries.close()
        return
    where = location(args)
    try:
        found = where.exists()
    except StoreUnreachable as exc:
        raise Unavailable(str(exc)) from None
    if not found:
        raise Unavailable(
            f"no projections store at {where}: run `lavalog projections serve` or "
            "`lavalog projections rebuild`, or pass --file FILE.jsonl"
        )
    queries = Queries(where)
    try:
        yield queries
    finally:
        queries.close()


def _token(path: Path) -> bytes:
    try:
        token = path.read_bytes().strip()
    except OSError as exc:
        raise UsageError(f"--token-file {path}: {exc.strerror}") from None
    if not token:
        raise UsageError(f"--token-file {path} is empty")
    return token


def fail(command: str, error: Exception) -> int:
    """Print the error; its exit code: 3 when nothing could be read, else 2 (usage)."""
    print(f"lavalog {command}: {error}", file=sys.stderr)
    return exit_codes.UNAVAILABLE if isinstance(error, Unavailable) else exit_codes.USAGE
