"""Logging for every lavalog process: structlog, JSON in production, readable in a terminal.

Lines about a job carry its key: bind it with `log.bind(job=key)`. The libraries'
own records (aiokafka, aiohttp: standard `logging`) are written in the same form to the
same stream, so a process's stderr is one kind of line. Tracebacks are Python's plain
ones: never rich's, which print local variables (a token, a whole job spec) into logs.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from typing import TextIO, cast

import structlog

LEVELS = ("debug", "info", "warning", "error")
#: the level `configure_logging` set; until it runs, structlog writes every level
_threshold = logging.NOTSET


def add_logging_arguments(parser: argparse.ArgumentParser) -> None:
    """`--log-level` and `--log-json`, for every long-running command."""
    parser.add_argument(
        "--log-level",
        choices=LEVELS,
        default=os.environ.get("LAVALOG_LOG_LEVEL", "info"),
        help="env LAVALOG_LOG_LEVEL",
    )
    as_json = os.environ.get("LAVALOG_LOG_JSON", "").strip().lower()
    parser.add_argument(
        "--log-json",
        action=argparse.BooleanOptionalAction,
        default={"true": True, "false": False}.get(as_json),
        help="JSON log lines (default: env LAVALOG_LOG_JSON=true|false, else when stderr is"
        " not a terminal)",
    )


def configure_logging(*, level: str = "info", json: bool | None = None) -> None:
    """JSON lines when `json` is true or stderr is not a terminal; colours otherwise."""
    global _threshold
    as_json = json if json is not None else not sys.stderr.isatty()
    threshold = _threshold = logging.getLevelNamesMapping()[level.upper()]
    renderer: structlog.typing.Processor = (
        structlog.processors.JSONRenderer()
        if as_json
        else structlog.dev.ConsoleRenderer(exception_formatter=structlog.dev.plain_traceback)
    )
    stamp = structlog.processors.TimeStamper(fmt="iso", utc=True)
    # a traceback becomes one string field in JSON; the console renders it itself
    exceptions = [structlog.processors.format_exc_info] if as_json else []
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            stamp,
            structlog.processors.StackInfoRenderer(),
            *exceptions,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(threshold),
        logger_factory=structlog.PrintLoggerFactory(file=cast(TextIO, _Stderr())),
        cache_logger_on_first_use=True,
    )
    handler = _LibraryHandler(_Stderr())
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=[
                structlog.stdlib.add_log_level,
                structlog.stdlib.add_logger_name,
                stamp,
            ],
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                *exceptions,
                renderer,
            ],
        )
    )
    handler.addFilter(_without_reported_bootstrap_failures)
    root = logging.getLogger()
    for previous in [h for h in root.handlers if isinstance(h, _LibraryHandler)]:
        root.removeHandler(previous)
    root.addHandler(handler)
    # the libraries' info lines (group joins, assignments) are noise beside lavalog's own
    root.setLevel(logging.DEBUG if threshold <= logging.DEBUG else max(threshold, logging.WARNING))


class _Stderr:
    """`sys.stderr` as it is when a line is written, not as it was when logging was
    configured: a caller (a test capturing output) may replace it in between."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


class _LibraryHandler(logging.StreamHandler["_Stderr"]):
    """The handler `configure_logging` adds to the root logger (and replaces when called
    again), beside any others."""


def _without_reported_bootstrap_failures(record: logging.LogRecord) -> bool:
    """aiokafka logs each bootstrap server it cannot reach, then raises an error that the
    caller reports (`lavalog run: cannot reach Kafka at ...`): one line, not two."""
    return not (record.name == "aiokafka" and str(record.msg).startswith('Unable connect to "'))


def writes(level: int) -> bool:
    """Whether lines at `level` (`logging.INFO`, ...) are written: a hot path asks before it
    makes the fields of a line that would be dropped."""
    return level >= _threshold
