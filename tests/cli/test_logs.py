"""`configure_logging`: one kind of line on stderr, lavalog's and the libraries', and
tracebacks without local variables (tests/cli/conftest.py puts logging back after each)."""

from __future__ import annotations

import json
import logging

import pytest
import structlog

from lavalog.controller.logs import configure_logging, writes


def fail_with_a_secret() -> None:
    token = "hunter2-do-not-log"  # what a traceback with local variables would print
    raise RuntimeError(f"failed after reading {len(token)} characters")


def test_console_tracebacks_show_no_local_variables(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging(level="info", json=False)
    try:
        fail_with_a_secret()
    except RuntimeError:
        structlog.get_logger("test").exception("it broke")
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err
    assert "RuntimeError: failed after reading 18 characters" in err
    assert "hunter2" not in err


def test_json_lines_for_lavalog_and_the_libraries(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging(level="info", json=True)
    structlog.get_logger("test").bind(job="ml/train").info("pods created", count=2)
    logging.getLogger("aiokafka.consumer").warning("heartbeat failed for group %s", "g")
    logging.getLogger("aiokafka.consumer").info("joined group")  # libraries' info: noise
    logging.getLogger("aiokafka").error('Unable connect to "%s": %s', "127.0.0.1:1", "refused")
    lines = [json.loads(line) for line in capsys.readouterr().err.splitlines()]
    assert [(line["level"], line["event"]) for line in lines] == [
        ("info", "pods created"),
        ("warning", "heartbeat failed for group g"),
    ]
    assert (lines[0]["job"], lines[0]["count"]) == ("ml/train", 2)
    assert lines[1]["logger"] == "aiokafka.consumer"


def test_a_hot_path_can_ask_whether_a_level_is_written() -> None:
    configure_logging(level="warning", json=True)
    assert (writes(logging.INFO), writes(logging.WARNING)) == (False, True)
    configure_logging(level="info", json=True)
    assert writes(logging.INFO)
