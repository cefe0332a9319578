"""The one way a simulated cluster component runs in the background: one asyncio task
from `start()` (inside the event loop) until `stop()`.

`BackgroundLoop` owns the task; `WorkQueue` adds the common case of a component that
reacts to store changes by queueing work and handling it one item at a time.
"""

from __future__ import annotations

import asyncio
import contextlib
from abc import ABC, abstractmethod
from typing import Generic, TypeVar

from simulator.errors import ApiError

T = TypeVar("T")


class BackgroundLoop(ABC):
    """Runs `_run` in a task named `task_name`; `start()` inside the loop, `stop()` to end."""

    def __init__(self, task_name: str) -> None:
        self._task_name = task_name
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name=self._task_name)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    @abstractmethod
    async def _run(self) -> None:
        """The component's work, until cancelled."""


class WorkQueue(BackgroundLoop, Generic[T]):
    """Handles queued items in order, one at a time. An item whose object changed
    meanwhile (`ApiError`) is dropped: the change that moved it queues it again."""

    def __init__(self, task_name: str) -> None:
        super().__init__(task_name)
        self._queue: asyncio.Queue[T] = asyncio.Queue()

    async def _run(self) -> None:
        while True:
            item = await self._queue.get()
            with contextlib.suppress(ApiError):
                self._handle(item)

    @abstractmethod
    def _handle(self, item: T) -> None:
        """Act on one queued item."""
