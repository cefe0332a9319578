"""A benchmark stopped by SIGTERM stops the processes it started."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from bench.harness import stop_child
from tests.processes import alive

ROOT = Path(__file__).resolve().parents[2]

#: a benchmark's shape: a child process held by an async context manager, then a wait
BENCHMARK = textwrap.dedent(
    """
    import asyncio, contextlib, sys
    sys.path.insert(0, sys.argv[1])
    from bench.harness import run_benchmark, stop_child

    @contextlib.asynccontextmanager
    async def child():
        proc = await asyncio.create_subprocess_exec("sleep", "600", stdout=asyncio.subprocess.DEVNULL)
        try:
            yield proc
        finally:
            await stop_child(proc)

    async def main():
        async with child() as proc:
            print(proc.pid, flush=True)
            await asyncio.sleep(600)

    run_benchmark(main())
    """
)


@pytest.mark.timeout(60)
def test_a_benchmark_sent_sigterm_stops_its_child_processes_and_says_so(tmp_path: Path) -> None:
    script = tmp_path / "benchmark.py"
    script.write_text(BENCHMARK)
    bench = subprocess.Popen(
        [sys.executable, str(script), str(ROOT)], stdout=subprocess.PIPE, text=True
    )
    assert bench.stdout is not None
    child = int(bench.stdout.readline())
    try:
        bench.send_signal(signal.SIGTERM)
        out, _ = bench.communicate(timeout=30)

        assert bench.returncode == 128 + signal.SIGTERM
        assert "stopped by SIGTERM" in out
        assert not alive(child)  # it is the benchmark's child: reaped, not a zombie
    finally:
        if alive(child):
            os.kill(child, signal.SIGKILL)


async def test_stopping_a_child_that_died_leaves_its_failure_as_the_news() -> None:
    """A simulated cluster that crashed mid-run: the cleanup must not raise over why."""
    proc = await asyncio.create_subprocess_exec(sys.executable, "-c", "raise SystemExit(3)")
    await proc.wait()

    await stop_child(proc)

    assert proc.returncode == 3
