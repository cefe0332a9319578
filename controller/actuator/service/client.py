"""The actuator's API calls: rate limited, transient failures retried, idempotent verbs.

Every decision may be carried out twice (at-least-once delivery, a crash before the
offset commit), so each write is phrased so that the second time is a no-op: create
treats AlreadyExists as done, delete treats NotFound and a failed uid precondition as
done (the object meant is gone), and updates are read-modify-write on resourceVersion,
retried on conflict.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

import msgspec
import structlog

from lavalog.controller.actuator.core import paths
from lavalog.controller.actuator.core.calls import Call, classify
from lavalog.controller.actuator.service.counters import Counters
from lavalog.controller.actuator.service.queues import aside
from lavalog.controller.actuator.service.ratelimit import RateLimiter, Sleep
from lavalog.controller.actuator.service.timing import Wait, retried, waiting
from lavalog.controller.kube import JSON, Kube, KubeError, is_transient, retry_after
from lavalog.controller.retry import API_CALLS, Backoff, RetryDelays, retry

Obj = dict[str, Any]
#: (existing, desired) -> what to write back, or None to leave the existing object alone
Merge = Callable[[Obj, Obj], Obj | None]
#: current -> the object to write, or None for no write
Change = Callable[[Obj], Obj | None]

_CONFLICT_ATTEMPTS = 10
#: how long one watch for a deletion stays open before the object is looked at again
_DELETION_WATCH_SECONDS = 60
_log = structlog.get_logger("lavalog.actuator")


class Api:
    def __init__(
        self,
        kube: Kube,
        limiter: RateLimiter,
        counters: Counters,
        *,
        delays: RetryDelays = API_CALLS,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        self._kube = kube
        self._limiter = limiter
        self._counters = counters
        self._delays = delays
        self._sleep = sleep
        #: requests sent (every attempt), by what they were
        self.calls: Counter[Call] = Counter()

    async def call(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, str | int | bool] | None = None,
        body: Any = None,
        content_type: str = JSON,
    ) -> bytes:
        """One request, sent again (after a backoff, and at least as late as a 429's
        Retry-After asks) for as long as it fails transiently."""
        what = classify(method, path)

        async def send() -> bytes:
            async with self._limiter:
                self.calls[what] += 1
                return await self._kube.request(
                    method, path, query=query, body=body, content_type=content_type
                )

        def count_retry(exc: Exception, delay: float) -> None:
            self._counters.retried += 1
            retried()
            _log.info("api call retried", method=method, path=path, error=str(exc), delay=delay)

        return await retry(
            send,
            delays=self._delays,
            transient=is_transient,
            on_retry=count_retry,
            at_least=retry_after,
            sleep=self._backoff,
        )

    async def _backoff(self, delay: float) -> None:
        """The wait before a call is sent again."""
        with waiting(Wait.ASIDE):
            await self._sleep(delay)

    async def get(self, path: str) -> Obj | None:
        """The object, or None when there is none."""
        try:
            return decode_object(await self.call("GET", path))
        except KubeError as exc:
            if exc.status == 404:
                return None
            raise

    async def create(self, collection: str, body: Obj) -> bool:
        """True when created, False when an object of that name already exists."""
        try:
            await self.call("POST", collection, body=body)
        except KubeError as exc:
            if exc.status == 409 and exc.reason == "AlreadyExists":
                return False
            raise
        return True

    async def delete(self, path: str, *, uid: str = "", propagation: str = "") -> bool:
        """True when deleted now; False when gone already or (with `uid`) replaced."""
        options: Obj = {"kind": "DeleteOptions", "apiVersion": "v1"}
        if uid:
            options["preconditions"] = {"uid": uid}
        if propagation:
            options["propagationPolicy"] = propagation
        try:
            await self.call("DELETE", path, body=options)
        except KubeError as exc:
            if exc.status in (404, 409):
                return False
            raise
        return True

    async def create_once_gone(self, collection: str, path: str, body: Obj, *, uid: str) -> bool:
        """Create `body` at `path` once the object `uid` that has its name is gone (a pod
        being deleted keeps its name until its kubelet has stopped it). False when another
        object has the name: someone else's, or made when this was carried out before."""
        backoff = Backoff(self._delays, sleep=self._sleep)
        while not await self.create(collection, body):
            current = await self.get(path)
            if current is None:
                continue  # gone between the create and the read
            meta = current.get("metadata") or {}
            if meta.get("uid") != uid:
                return False
            if not await self._deleted(collection, meta.get("name", ""), uid, meta):
                await backoff.wait()
        return True

    async def _deleted(self, collection: str, name: str, uid: str, meta: Obj) -> bool:
        """Watch the object `name` from its `meta`'s resourceVersion until `uid` is deleted
        (True), or until the watch ends or fails (False: the caller looks again)."""
        query: dict[str, str | int | bool] = {
            "watch": True,
            "fieldSelector": f"metadata.name={name}",
            "resourceVersion": str(meta.get("resourceVersion", "")),
            "timeoutSeconds": _DELETION_WATCH_SECONDS,
        }
        try:
            async with (
                aside(),  # the other jobs' lanes go on meanwhile
                self.watch(collection, query, seconds=_DELETION_WATCH_SECONDS) as lines,
            ):
                with waiting(Wait.ASIDE):
                    async for line in lines:
                        change = _WATCHED.decode(line)
                        if change.type == "DELETED" and change.object.metadata.uid == uid:
                            return True
                        if change.type == "ERROR":
                            return False  # e.g. 410, history expired: look again
        except Exception as exc:
            if not is_transient(exc):
                raise
            _log.info("deletion watch failed", path=collection, name=name, error=str(exc))
        return False

    @contextlib.asynccontextmanager
    async def watch(
        self, collection: str, query: Mapping[str, str | int | bool], *, seconds: float
    ) -> AsyncIterator[AsyncIterator[bytes]]:
        """A watch of `collection` (`query` as the API takes it, `watch` included), open
        `seconds` at most: its lines. It takes a token of the budget, as every request
        does, but holds no slot of the concurrency while it is open."""
        async with self._limiter:
            pass
        self.calls[classify("GET", collection, watch=True)] += 1
        async with self._kube.stream(collection, query, request_timeout=seconds + 10) as lines:
            yield lines

    async def update(
        self, path: str, change: Change, *, subresource: str = "", current: Obj | None = None
    ) -> Obj | None:
        """Read-modify-write: PUT `change(object)` guarded by its resourceVersion, re-reading
        and trying again on a conflict. `current` (e.g. cached) saves the first read.

        The object written, or the object left unchanged, or None when there is none.
        """
        target = f"{path}/{subresource}" if subresource else path
        conflicts = 0
        while True:
            found = current if current is not None else await self.get(path)
            current = None
            if found is None:
                return None
            wanted = change(found)
            if wanted is None:
                return found
            try:
                return decode_object(await self.call("PUT", target, body=wanted))
            except KubeError as exc:
                conflicts += 1
                if exc.status != 409 or conflicts == _CONFLICT_ATTEMPTS:
                    raise

    async def upsert(self, manifest: Obj, merge: Merge) -> None:
        """Create `manifest`, or bring the existing object in line as `merge` says."""
        collection, path = paths.of_manifest(manifest)
        if await self.create(collection, manifest):
            return
        await self.update(path, lambda existing: merge(existing, manifest))


class _Meta(msgspec.Struct):
    uid: str = ""


class _Object(msgspec.Struct):
    metadata: _Meta = msgspec.field(default_factory=_Meta)


class _Watched(msgspec.Struct):
    """One line of a watch: the change and the uid of the object it is about."""

    type: str
    object: _Object = msgspec.field(default_factory=_Object)


_WATCHED = msgspec.json.Decoder(_Watched)


def decode_object(data: bytes) -> Obj:
    """An API answer's JSON object."""
    decoded: Obj = msgspec.json.decode(data)
    return decoded
