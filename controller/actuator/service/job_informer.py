"""The actuator's Jobs as Volcano's job controller has them: from an informer, not a read each.

Volcano's controller reads a Job from its informer's cache (client-go's list+watch); the
actuator lists the Jobs once its partitions are taken over and then watches them, into
the `HeldJobs` its decisions read, so that a job created meanwhile costs no read of its
own before its first status write or pod create. What it holds is a cache, never the
record: a Job not held yet is read as before, a stale resourceVersion is refused (409)
and read again, so a watch that lags, drops or fails costs reads, never a wrong write.
The watch resumes where it ended, lists again when its history expired (410: an ERROR
event, and the Jobs deleted meanwhile are let go), and is retried with backoff after a
failure (an ERROR event of another code is one); without RBAC to list or watch Jobs (403) it stops
and the Jobs are read one by one.
"""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
import msgspec
import structlog

from lavalog.controller.actuator.core import paths
from lavalog.controller.actuator.core.held_jobs import HeldJobs, key_of, uid_of
from lavalog.controller.actuator.core.priority import Priority
from lavalog.controller.actuator.service.client import Api, decode_object
from lavalog.controller.actuator.service.ratelimit import prioritized
from lavalog.controller.kube import KubeError
from lavalog.controller.retry import WATCHES, Backoff, RetryDelays
from lavalog.events.volcano.api import API_VERSION as JOB_API_VERSION

#: Jobs per page when they are listed
LIST_PAGE = 500
#: how long the API server keeps one watch open before it is resumed
WATCH_SECONDS = 300
_log = structlog.get_logger("lavalog.actuator")


class _Change(msgspec.Struct):
    """One line of a watch: ADDED, MODIFIED, DELETED, BOOKMARK or ERROR, and its object."""

    type: str
    object: dict[str, Any] = {}


_decode_change = msgspec.json.Decoder(_Change).decode


class _Expired(Exception):
    """The watch's history is gone (410): list again."""


class JobInformer:
    """`await informer.run()` until cancelled: the Jobs (of `namespace`, or all) into `held`."""

    def __init__(
        self,
        api: Api,
        held: HeldJobs,
        namespace: str | None = None,
        *,
        delays: RetryDelays = WATCHES,
        watch_seconds: int = WATCH_SECONDS,
    ) -> None:
        self._api = api
        self._held = held
        self._path = paths.jobs(namespace)
        self._delays = delays
        self._watch_seconds = watch_seconds
        #: set once the Jobs are listed, or once they will not be (no RBAC to list them)
        self.listed = asyncio.Event()

    async def run(self) -> None:
        try:
            await self._run()
        finally:
            self.listed.set()

    async def _run(self) -> None:
        backoff = Backoff(self._delays)
        version = ""
        while True:
            try:
                if not version:
                    version = await self.list()
                    self.listed.set()
                    _log.info("jobs listed", jobs=len(self._held))
                version = await self._watch(version)
                backoff.reset()
            except _Expired:
                version = ""
            except (KubeError, aiohttp.ClientError, OSError, msgspec.DecodeError) as exc:
                if isinstance(exc, KubeError) and not exc.temporary:  # e.g. no RBAC for Jobs
                    _log.warning("jobs not watched; each is read when needed", error=str(exc))
                    return
                _log.info("jobs watch failed, retrying", error=f"{type(exc).__name__}: {exc}")
                await backoff.wait()

    async def list(self) -> str:
        """Hold the Jobs the API server lists (as many as `held` holds at most), one page
        of `LIST_PAGE` per call, and let go of those it does not list (deleted while no
        watch saw it: client-go's reflector replaces its store so); the list's
        resourceVersion, where a watch starts."""
        listed, token, version = 0, "", ""
        keys: set[str] = set()
        with prioritized(Priority.PODS):
            while listed < self._held.size:
                query: dict[str, str | int | bool] = {"limit": LIST_PAGE}
                if token:
                    query["continue"] = token
                page = decode_object(await self._api.call("GET", self._path, query=query))
                meta = page.get("metadata") or {}
                version = version or str(meta.get("resourceVersion", ""))
                for item in page.get("items") or []:
                    job = {"apiVersion": JOB_API_VERSION, "kind": "Job", **item}
                    self._held.hold(job)
                    keys.add(key_of(job))
                    listed += 1
                token = meta.get("continue") or ""
                if not token:
                    self._held.keep_only(keys)
                    break
        return version

    async def _watch(self, version: str) -> str:
        """Hold each change from `version` on until the watch ends; the last version seen."""
        query: dict[str, str | int | bool] = {
            "watch": True,
            "allowWatchBookmarks": True,
            "resourceVersion": version,
            "timeoutSeconds": self._watch_seconds,
        }
        async with self._api.watch(self._path, query, seconds=self._watch_seconds) as lines:
            async for line in lines:
                change = _decode_change(line)
                job = change.object
                if change.type == "ERROR":
                    if job.get("code") == 410:
                        raise _Expired
                    raise KubeError(int(job.get("code") or 500), "", str(job.get("message")))
                version = str((job.get("metadata") or {}).get("resourceVersion") or version)
                if change.type in ("ADDED", "MODIFIED"):
                    self._held.hold(job)
                elif change.type == "DELETED":
                    self._held.deleted(key_of(job), uid_of(job))
        return version
