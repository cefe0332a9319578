"""Rebuilding a store from the beginning of a source, as fast as two processes can.

The store is a bulk load (`projections.service.store.writer`): its SQL runs in a child process while
this one decodes and folds, so batches are read one after the other (reading ahead in a
thread only adds GIL hand-overs to work that is all in this process).

A rebuild only accumulates data that holds no reference cycles, so the cyclic garbage
collector is paused while it runs: its passes over the growing heap otherwise cost a
third of the rebuild (bench/replay.py measures it). A long-running `serve` keeps the
collector on, if rare (`lavalog.controller.collector`): aiohttp's requests do make cycles.
"""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Callable
from typing import Protocol

from lavalog.projections.service.runner import Runner, Source
from lavalog.projections.service.store.writer import Store

#: Events per batch (one transaction). Memory grows with it; a bulk load keeps the
#: histories of the jobs the last batch touched, so a batch must span the events that a
#: job's interleaved neighbours put between two of its own (smaller: histories leave
#: memory and are read back).
BATCH = 20_000


class CountedSource(Source, Protocol):
    """A source that knows how much it has read and how much there is."""

    consumed: int
    total: int


async def rebuild(
    store: Store, source: CountedSource, *, progress: Callable[[int, int], None] | None = None
) -> int:
    """Apply everything the source holds; returns how many events were new."""
    runner = Runner(store, source, read_ahead=False)
    collecting = gc.isenabled()
    gc.disable()
    try:
        task = asyncio.create_task(runner.run())
        while not task.done():
            await asyncio.wait({task}, timeout=0.1)
            if progress is not None:
                progress(source.consumed, source.total)
        await task
    finally:
        if collecting:
            gc.enable()
    return runner.applied
