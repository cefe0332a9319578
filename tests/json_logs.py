"""Logging as `lavalog run` configures it (JSON lines on stderr) for one test, and the
lines read back; the process's logging set-up is put back afterwards."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import structlog

from lavalog.controller import logs
from lavalog.controller.logs import configure_logging

Lines = Callable[[], list[dict[str, Any]]]


@contextmanager
def restored_logging() -> Iterator[None]:
    """Undo whatever `configure_logging` the code under test calls (`lavalog run` does)."""
    saved = structlog.get_config()
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    threshold = logs._threshold
    try:
        yield
    finally:
        structlog.configure(**saved)
        root.handlers, root.level = handlers, level
        logs._threshold = threshold


@contextmanager
def json_logs(capsys: pytest.CaptureFixture[str], level: str = "info") -> Iterator[Lines]:
    """`lines()` parses what was logged since the last call, one dict per line."""
    with restored_logging():
        configure_logging(level=level, json=True)
        # loggers bound now must not keep this configuration after the test
        structlog.configure(cache_logger_on_first_use=False)
        yield lambda: [json.loads(line) for line in capsys.readouterr().err.splitlines()]
