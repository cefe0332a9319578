"""`lavalog run` and `lavalog projections serve` collect cyclic garbage rarely: the
objects they held at start are frozen out of the collector's passes, and young passes
come every 100,000 allocations."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from lavalog.controller.collector import THRESHOLDS

_RUN_THEN_REPORT = """
import gc
from lavalog.cli.main import main
print(gc.get_threshold(), gc.get_freeze_count() > 0)
code = main({command!r})
print(code, gc.get_threshold(), gc.get_freeze_count() > 0)
"""

_NO_BROKER = ["--bootstrap-servers", "127.0.0.1:1"]


@pytest.mark.parametrize(
    "command",
    [
        ["run", "--kubeconfig", "{tmp}/missing", *_NO_BROKER],
        ["projections", "serve", "--state-dir", "{tmp}", "--port", "0", *_NO_BROKER],
    ],
    ids=["run", "projections serve"],
)
def test_a_long_running_command_sets_the_collector_before_it_starts(
    tmp_path: Path, command: list[str]
) -> None:
    args = [arg.format(tmp=tmp_path) for arg in command]
    done = subprocess.run(
        [sys.executable, "-c", _RUN_THEN_REPORT.format(command=args)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    before, after = done.stdout.strip().splitlines()
    assert before == "(700, 10, 10) False"  # CPython's defaults, until the command
    # it gave up on the missing kubeconfig or broker, with the collector set already
    assert after == f"1 {THRESHOLDS} True"
