"""Watch streams: replay from a resourceVersion, then follow the store's history.

A watch is a cursor into the store's contiguous change history, not a per-watcher
queue: each wake-up sends every change after the cursor that this watch selects, so a
slow watcher costs nothing until it reads, and one that falls behind the bounded
history gets `410 Gone` exactly as from a real API server. Selector transitions are
faithful: an object that stops matching is sent as DELETED, one that starts matching
as ADDED.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from lavalog.simulator.errors import ApiError
from lavalog.simulator.registry import ResourceType
from lavalog.simulator.selectors import Selector
from lavalog.simulator.store import Change, Store, encode

Write = Callable[[bytes], Awaitable[None]]

_INITIAL_CHUNK = 1000


@dataclass(frozen=True, slots=True)
class WatchRequest:
    resource: ResourceType
    namespace: str | None
    selector: Selector
    #: None: start with synthetic ADDED events for every current object.
    since: int | None
    bookmarks: bool
    timeout: float | None
    send_initial_events: bool = False


def _line(kind: bytes, raw: bytes) -> bytes:
    return b'{"type":"' + kind + b'","object":' + raw + b"}\n"


def _bookmark(resource: ResourceType, rv: int, *, initial_end: bool = False) -> bytes:
    meta: dict[str, object] = {"resourceVersion": str(rv)}
    if initial_end:
        meta["annotations"] = {"k8s.io/initial-events-end": "true"}
    obj = {"kind": resource.kind, "apiVersion": resource.api_version, "metadata": meta}
    return _line(b"BOOKMARK", encode(obj))


def _event(change: Change, req: WatchRequest) -> bytes | None:
    """The line this watch sends for `change`, or None if it does not select it."""
    if change.resource is not req.resource:
        return None
    obj = change.entry.obj
    if req.namespace is not None and obj["metadata"].get("namespace") != req.namespace:
        return None
    kind = change.type
    if not req.selector.empty:
        now = req.selector.matches(obj)
        before = change.old is not None and req.selector.matches(change.old)
        if kind == "MODIFIED":
            if now and not before:
                kind = "ADDED"
            elif before and not now:
                kind = "DELETED"
            elif not now:
                return None
        elif not (now or before):
            return None
    return _line(kind.encode(), change.entry.raw)


async def serve(store: Store, req: WatchRequest, write: Write, *, bookmark_interval: float) -> None:
    """Stream `req` through `write` until timeout, a dropped watch, or the client leaves;
    counted in `store.watching` meanwhile (a dropped or failed watch is one open then)."""
    store.watching[req.resource] += 1
    try:
        await _stream(store, req, write, store.watch_epoch, bookmark_interval)
    finally:
        store.watching[req.resource] -= 1


async def _stream(
    store: Store, req: WatchRequest, write: Write, epoch: int, bookmark_interval: float
) -> None:
    deadline = None if req.timeout is None else time.monotonic() + req.timeout
    if req.since is None:
        cursor = store.rv
        chunk: list[bytes] = []
        for entry in store.scan(req.resource, req.namespace, req.selector):
            chunk.append(_line(b"ADDED", entry.raw))
            if len(chunk) >= _INITIAL_CHUNK:
                await write(b"".join(chunk))
                chunk = []
        if req.send_initial_events and req.bookmarks:
            chunk.append(_bookmark(req.resource, cursor, initial_end=True))
        if chunk:
            await write(b"".join(chunk))
    else:
        cursor = req.since
    next_bookmark = time.monotonic() + bookmark_interval
    while True:
        try:
            changes = store.changes_since(cursor)
        except ApiError as exc:
            await write(_line(b"ERROR", encode(exc.status())))
            return
        if changes:
            cursor = changes[-1].rv
            lines = [line for change in changes if (line := _event(change, req)) is not None]
            if lines:
                await write(b"".join(lines))
        if store.watch_epoch != epoch:
            failed = store.watch_errors.get(epoch + 1)
            if failed is not None:
                await write(_line(b"ERROR", encode(failed.status())))
            return
        now = time.monotonic()
        if req.bookmarks and now >= next_bookmark:
            await write(_bookmark(req.resource, cursor))
            next_bookmark = now + bookmark_interval
        wait = next_bookmark - now if req.bookmarks else None
        if deadline is not None:
            if now >= deadline:
                return
            wait = deadline - now if wait is None else min(wait, deadline - now)
        if store.rv > cursor:
            continue  # written while this watch was sending: no wake-up will come for it
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(wait):
                await store.wait(req.resource)
