"""SIGUSR1 makes a running controller log where each of its tasks waits."""

from __future__ import annotations

import asyncio
import os
import signal

from structlog.testing import capture_logs

from lavalog.controller.task_stacks import log_task_stacks_on_sigusr1


async def waits_for_a_call_that_never_returns(never: asyncio.Event) -> None:
    await never.wait()


async def test_sigusr1_logs_each_tasks_stack() -> None:
    never = asyncio.Event()
    stuck = asyncio.create_task(waits_for_a_call_that_never_returns(never), name="lane-ns/job")
    log_task_stacks_on_sigusr1()
    try:
        with capture_logs() as logs:
            os.kill(os.getpid(), signal.SIGUSR1)
            # the handler runs on a later turn of the loop: nothing to await but turns
            async with asyncio.timeout(5):
                while not any(entry["event"] == "task stacks logged" for entry in logs):  # noqa: ASYNC110
                    await asyncio.sleep(0.01)
        stacks = {entry["task"]: entry["stack"] for entry in logs if entry["event"] == "task stack"}
        assert "waits_for_a_call_that_never_returns" in stacks["lane-ns/job"]
    finally:
        asyncio.get_running_loop().remove_signal_handler(signal.SIGUSR1)
        stuck.cancel()
