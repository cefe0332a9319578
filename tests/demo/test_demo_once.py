"""`lavalog demo --once`, as a new user runs it: every story of the README plays out, run
after run (the faults once raced each other and the launcher's own exit). The runs share
nothing (each its own broker, cluster and ports), so they run side by side."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from lavalog.cli.demo.stories import STORIES

ROOT = Path(__file__).resolve().parents[2]
RUNS = 3


async def demo_once(state_dir: Path, http_port: int = 0) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "lavalog.cli.main", "demo", "--once", "--time-scale", "50",
        "--http-port", str(http_port), "--state-dir", str(state_dir), "--timeout", "120",
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )  # fmt: skip
    output, _ = await proc.communicate()
    return await proc.wait(), output.decode()


@pytest.mark.integration
async def test_every_story_plays_out_run_after_run(tmp_path: Path):
    """The runs go side by side; the last finds the web UI's port taken: it says so, and
    plays out all the same."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = taken.getsockname()[1]
        ports = [0] * (RUNS - 1) + [busy]
        runs = await asyncio.gather(
            *(demo_once(tmp_path / f"run-{run}", port) for run, port in enumerate(ports))
        )
    for run, (code, output) in enumerate(runs):
        _check(run, code, output)
    said = f"the web UI could not start: port {busy} on 127.0.0.1 is in use"
    assert said in runs[-1][1], runs[-1][1][-3000:]


def _check(run: int, code: int, output: str) -> None:
    verdict = output[output.rindex("stories (as in the README") :]

    assert code == 0, f"run {run + 1} of {RUNS}:\n{output[-6000:]}"
    for story in STORIES:
        assert f"ok    {story.name}" in verdict, f"run {run + 1}: {verdict}"
    assert f"all {len(STORIES)} stories" in verdict
