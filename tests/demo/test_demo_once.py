"""`lavalog demo --once`, as a new user runs it: every story of the README plays out, run
after run (the faults once raced each other and the launcher's own exit)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest

from lavalog.cli.demo.stories import STORIES

ROOT = Path(__file__).resolve().parents[2]
RUNS = 3


async def demo_once(state_dir: Path) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "lavalog.cli.main", "demo", "--once", "--time-scale", "50",
        "--http-port", "0", "--state-dir", str(state_dir), "--timeout", "120",
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )  # fmt: skip
    output, _ = await proc.communicate()
    return await proc.wait(), output.decode()


@pytest.mark.integration
async def test_every_story_plays_out_run_after_run(tmp_path: Path):
    for run in range(RUNS):
        code, output = await demo_once(tmp_path / f"run-{run}")
        verdict = output[output.rindex("stories (as in the README") :]

        assert code == 0, f"run {run + 1} of {RUNS}:\n{output[-6000:]}"
        for story in STORIES:
            assert f"ok    {story.name}" in verdict, f"run {run + 1}: {verdict}"
        assert f"all {len(STORIES)} stories" in verdict
