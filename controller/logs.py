"""Logging for every lavalog process: structlog, JSON in production, readable in a terminal.

Lines about a job carry its key: bind it with `log.bind(job=key)`.
"""

from __future__ import annotations

import logging
import sys

import structlog


def configure_logging(*, level: str = "info", json: bool | None = None) -> None:
    """JSON lines when `json` is true or stderr is not a terminal; colours otherwise."""
    as_json = json if json is not None else not sys.stderr.isatty()
    renderer: structlog.typing.Processor = (
        structlog.processors.JSONRenderer() if as_json else structlog.dev.ConsoleRenderer()
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.StackInfoRenderer(),
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(
            logging.getLevelNamesMapping()[level.upper()]
        ),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=True,
    )
