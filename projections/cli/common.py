"""Options and helpers shared by the projections subcommands: where to read, how to print."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from events.topics import split_job_key
from projections.database import Location, StoreUnreachable, store_location
from projections.file_source import read_file
from projections.queries import Queries
from projections.store import Store, load

STATE_DIR_ENV = "LAVALOG_STATE_DIR"
STORE_ENV = "LAVALOG_STORE"


class UsageError(Exception):
    """A problem with what the user asked for: printed, exit code 2."""


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
    """`--state-dir` or `--file`: the store, or a JSONL file read into a throwaway store."""
    add_state_dir(parser)
    parser.add_argument(
        "--file", type=Path, help="read this JSONL file of events instead of the store"
    )


def add_job(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("job", type=job_key, metavar="NAMESPACE/NAME", help="the job")


def job_key(text: str) -> str:
    try:
        split_job_key(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


@contextmanager
def open_queries(args: argparse.Namespace) -> Iterator[Queries]:
    """Queries over the store in `--state-dir`, or over `--file` loaded into a temporary one."""
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
        raise UsageError(str(exc)) from None
    if not found:
        raise UsageError(
            f"no projections store at {where}: run `lavalog projections serve` or "
            "`lavalog projections rebuild`, or pass --file FILE.jsonl"
        )
    queries = Queries(where)
    try:
        yield queries
    finally:
        queries.close()


def fail(command: str, error: Exception) -> int:
    print(f"lavalog {command}: {error}", file=sys.stderr)
    return 2
