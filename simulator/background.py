"""The one way a simulated cluster component runs in the background: one asyncio task
from `start()` (inside the event loop) until `stop()`.

`BackgroundLoop` owns the task; `WorkQueue` adds the common case of a component that
reacts to store changes (`_observe`) by queueing work and handling it one item at a time
(`_handle`).
"""

from __future__ import annotations

import asyncio
import contextlib
from abc import ABC, abstractmethod
from typing import ClassVar, Generic, TypeVar

from lavalog.simulator.errors import ApiError
from lavalog.simulator.objects import Objects
from lavalog.simulator.store import Change

T = TypeVar("T")


class BackgroundLoop(ABC):
    """Runs `_run` in a task named `task_name`; `start()` inside the loop, `stop()` to end."""

    task_name: ClassVar[str]

    def __init__(self) -> None:
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name=self.task_name)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    @abstractmethod
    async def _run(self) -> None:
        """The component's work, until cancelled."""


class WorkQueue(BackgroundLoop, Generic[T]):
    """Queues work from the changes of `objects`' store and handles it in order, one item
    at a time. An item whose object changed or went away meanwhile (`ApiError`) is
    dropped: if work remains, the change that moved it queues it again."""

    def __init__(self, objects: Objects) -> None:
        super().__init__()
        self.objects = objects
        self._queue: asyncio.Queue[T] = asyncio.Queue()
        objects.store.subscribe(self._observe)

    @abstractmethod
    def _observe(self, change: Change) -> None:
        """Queue (`self._queue.put_nowait`) the work a store change asks for, if any."""

    async def _run(self) -> None:
        while True:
            item = await self._queue.get()
            with contextlib.suppress(ApiError):
                self._handle(item)

    @abstractmethod
    def _handle(self, item: T) -> None:
        """Act on one queued item."""
