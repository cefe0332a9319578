"""A watch's reader stops with the watch, and never keeps a stopped watcher going."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from lavalog.controller.watchers.service.watch import _ReadAhead


async def quiet_stream() -> AsyncIterator[bytes]:
    """A watch on which nothing happens."""
    await asyncio.Event().wait()
    yield b""  # pragma: no cover


async def test_a_watcher_stopped_while_its_reader_stops_is_stopped() -> None:
    """A watch closes its reader as it ends (an ERROR event, a dropped connection); a
    watcher stopped in that moment (a step down, a shutdown) was left watching on: its
    stop was taken for the reader's own, and it listed and watched again on a client
    about to be closed ("Session is closed")."""
    reader = _ReadAhead(quiet_stream(), max_batch=10)
    closing = asyncio.Event()

    async def watcher() -> str:
        closing.set()
        await reader.close()
        return "watching on"

    task = asyncio.create_task(watcher())
    await closing.wait()  # the watcher now waits for its reader to stop
    task.cancel()

    done, _ = await asyncio.wait({task}, timeout=5)
    assert task in done and task.cancelled()
    assert reader._task.done()


async def test_a_reader_closed_by_its_watch_lets_the_watch_go_on() -> None:
    """Its own stop is not the watcher's: the watch resumes after closing it."""
    reader = _ReadAhead(quiet_stream(), max_batch=10)
    await asyncio.sleep(0)  # reading

    await reader.close()

    assert reader._task.cancelled()
