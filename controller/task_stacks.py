"""Where every task of a running controller waits: `kill -USR1 <pid>` logs it.

A controller that is alive but makes no progress (a lane waiting on a call that never
returns, a group that never forms) shows nothing in its log; the stacks of its asyncio
tasks say where each one waits, without stopping the process. The chaos run asks for
them before it stops replicas that did not settle.
"""

from __future__ import annotations

import asyncio
import io
import signal

import structlog

log = structlog.get_logger("lavalog")

#: innermost frames shown per task: enough to see the awaited call and who awaits it
FRAMES = 12


def log_task_stacks() -> None:
    """One log line per task of the running loop: its name and its stack."""
    tasks = sorted(asyncio.all_tasks(), key=lambda task: task.get_name())
    for task in tasks:
        stack = io.StringIO()
        task.print_stack(limit=FRAMES, file=stack)
        log.warning("task stack", task=task.get_name(), stack=stack.getvalue())
    log.warning("task stacks logged", tasks=len(tasks))


def log_task_stacks_on_sigusr1() -> None:
    """Install the SIGUSR1 handler on the running loop."""
    asyncio.get_running_loop().add_signal_handler(signal.SIGUSR1, log_task_stacks)
