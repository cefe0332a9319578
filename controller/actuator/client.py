"""The actuator's API calls: rate limited, transient failures retried, idempotent verbs.

Every decision may be carried out twice (at-least-once delivery, a crash before the
offset commit), so each write is phrased so that the second time is a no-op: create
treats AlreadyExists as done, delete treats NotFound and a failed uid precondition as
done (the object meant is gone), and updates are read-modify-write on resourceVersion,
retried on conflict.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any

import msgspec
import structlog

from controller.actuator import paths
from controller.actuator.counters import Counters
from controller.actuator.ratelimit import RateLimiter, Sleep
from controller.actuator.retry import Backoff, is_transient
from controller.kube import Kube, KubeError

Obj = dict[str, Any]
#: (existing, desired) -> what to write back, or None to leave the existing object alone
Merge = Callable[[Obj, Obj], Obj | None]
#: current -> the object to write, or None for no write
Change = Callable[[Obj], Obj | None]

_CONFLICT_ATTEMPTS = 10
DEFAULT_BACKOFF = Backoff()
_log = structlog.get_logger("lavalog.actuator")


class Api:
    def __init__(
        self,
        kube: Kube,
        limiter: RateLimiter,
        counters: Counters,
        *,
        backoff: Backoff = DEFAULT_BACKOFF,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        self._kube = kube
        self._limiter = limiter
        self._counters = counters
        self._backoff = backoff
        self._sleep = sleep

    async def call(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, str | int | bool] | None = None,
        body: Any = None,
    ) -> bytes:
        """One request, sent again (after a backoff) for as long as it fails transiently."""
        attempt = 0
        while True:
            try:
                async with self._limiter:
                    return await self._kube.request(method, path, query=query, body=body)
            except Exception as exc:
                if not is_transient(exc):
                    raise
                delay = self._backoff.delay(attempt)
                attempt += 1
                self._counters.retried += 1
                _log.info("api call retried", method=method, path=path, error=str(exc), delay=delay)
                await self._sleep(delay)

    async def get(self, path: str) -> Obj | None:
        """The object, or None when there is none."""
        try:
            return _decode(await self.call("GET", path))
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
                return _decode(await self.call("PUT", target, body=wanted))
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


def _decode(data: bytes) -> Obj:
    decoded: Obj = msgspec.json.decode(data)
    return decoded
