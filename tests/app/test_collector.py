"""`lavalog run` collects cyclic garbage rarely: the objects it held at start are frozen
out of the collector's passes, and young passes come every 100,000 allocations."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from lavalog.controller.collector import THRESHOLDS

_RUN_THEN_REPORT = """
import gc
from lavalog.cli.main import main
print(gc.get_threshold(), gc.get_freeze_count() > 0)
code = main(["run", "--kubeconfig", {kubeconfig!r}, "--bootstrap-servers", "127.0.0.1:1"])
print(code, gc.get_threshold(), gc.get_freeze_count() > 0)
"""


def test_lavalog_run_sets_the_collector_before_it_starts(tmp_path: Path) -> None:
    script = _RUN_THEN_REPORT.format(kubeconfig=str(tmp_path / "missing"))
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    before, after = done.stdout.strip().splitlines()
    assert before == "(700, 10, 10) False"  # CPython's defaults, until `lavalog run`
    # it gave up on the missing kubeconfig, with the collector set already
    assert after == f"1 {THRESHOLDS} True"
