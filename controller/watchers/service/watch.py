"""A resilient list+watch of one resource: the stream of its changes, nothing else.

Modelled on kopf's `_cogs/clients/watching.py`: this module only lists, watches,
reconnects and resumes; turning changes into observations is `translate`'s job and
sending them is `publisher`'s.

The contract is that of an uninterrupted watch, whatever happens to the connection:

* The first list (paginated) becomes ADDED changes; the watch then starts from the
  list's resourceVersion, with bookmarks, and a dropped or timed-out watch resumes from
  the last resourceVersion seen (bookmarks included).
* On 410 Gone (an HTTP 410, or an ERROR event with code 410) the history is lost, so
  the resource is listed again and compared with what was known: vanished objects
  become DELETED (with their last known state), new ones ADDED, changed ones MODIFIED.
  Deletions come first, so that a name deleted and created again while away is seen
  in that order.
* A watch may start from objects believed to exist (`known`): its first list reports
  those gone as DELETED in the same way.
* Errors (connection failures, 429/5xx, any other API error) are retried with
  exponential backoff and jitter; nothing is skipped.
* Except an object that does not decode as its kind (a field of the wrong type): it is
  logged and skipped, and the position moves past it, since retrying would read the same
  object again forever and every change after it would be lost.

Changes come in batches (everything the server has sent so far, up to `max_batch`), and
the position advances past a batch only when the consumer asks for the next one: a
consumer that delivers each batch before taking the next never lets a change fall
between a resumed watch and a lost delivery.
"""

from __future__ import annotations

import asyncio
import enum
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Generic, TypeVar

import aiohttp
import msgspec
import structlog

from lavalog.controller.kube import Kube, KubeError
from lavalog.controller.retry import WATCHES, Backoff, RetryDelays, retry
from lavalog.controller.watchers.core.changes import (
    Change,
    Gone,
    WatchError,
    decode_or_skip,
    parse,
    relisted,
    remember,
)
from lavalog.controller.watchers.core.objects import (
    Command,
    Job,
    KubeObject,
    List,
    ListMeta,
    Pod,
    PodGroup,
)
from lavalog.events.volcano import labels
from lavalog.events.volcano.api import API_VERSION, COMMAND_API_VERSION, PODGROUP_API_VERSION

T = TypeVar("T", bound=KubeObject)

log = structlog.get_logger("lavalog.watchers")


@dataclass(frozen=True, slots=True)
class Resource(Generic[T]):
    """Where one kind lives in the API, and which of its objects are watched."""

    #: `/api/v1` or `/apis/<group>/<version>`
    prefix: str
    plural: str
    type: type[T]
    label_selector: str = ""

    def path(self, namespace: str | None) -> str:
        if namespace is None:
            return f"{self.prefix}/{self.plural}"
        return f"{self.prefix}/namespaces/{namespace}/{self.plural}"


#: pods of Volcano jobs only (the owner is checked on each pod by `translate`)
PODS = Resource("/api/v1", "pods", Pod, label_selector=labels.JOB_NAME)
JOBS = Resource(f"/apis/{API_VERSION}", "jobs", Job)
PODGROUPS = Resource(f"/apis/{PODGROUP_API_VERSION}", "podgroups", PodGroup)
COMMANDS = Resource(f"/apis/{COMMAND_API_VERSION}", "commands", Command)


class Mark(enum.Enum):
    """Signals among the batches."""

    #: a (re)list and the changes it revealed have all been consumed: caught up
    LISTED = enum.auto()


@dataclass(frozen=True, kw_only=True)
class WatchSettings:
    #: the server ends each watch after this long; it is then resumed
    timeout_seconds: int = 300
    page_size: int = 500
    max_batch: int = 1000
    #: how long to wait before a failed list or watch is tried again
    retry: RetryDelays = WATCHES
    request_timeout: float = 60.0


#: failures worth retrying: all of them, since a watcher that gives up loses changes
RETRYABLE = (
    KubeError,
    Gone,
    WatchError,
    aiohttp.ClientError,
    OSError,
    TimeoutError,
    msgspec.DecodeError,
)


class _RawPage(msgspec.Struct, frozen=True):
    """A list page whose items are left undecoded, to decode one by one."""

    metadata: ListMeta = ListMeta()
    items: tuple[msgspec.Raw, ...] = ()


_raw_page_decoder = msgspec.json.Decoder(_RawPage)


class _End:
    """The reader reached the end of the stream, or failed."""

    def __init__(self, error: BaseException | None = None) -> None:
        self.error = error


class _ReadAhead:
    """Reads a watch stream in a task so that the lines already received form a batch."""

    def __init__(self, lines: AsyncIterator[bytes], max_batch: int) -> None:
        self._queue: asyncio.Queue[bytes | _End] = asyncio.Queue(maxsize=max_batch)
        self._max_batch = max_batch
        self._task = asyncio.create_task(self._pump(lines))
        self._ended: _End | None = None

    async def _pump(self, lines: AsyncIterator[bytes]) -> None:
        try:
            async for line in lines:
                await self._queue.put(line)
        except Exception as exc:  # handed to the consumer, which decides
            await self._queue.put(_End(exc))
        else:
            await self._queue.put(_End())

    async def next_batch(self) -> list[bytes] | None:
        """The lines received so far (at least one), or None at the end of the stream."""
        if self._ended is None:
            batch: list[bytes] = []
            item = await self._queue.get()
            while True:
                if isinstance(item, _End):
                    self._ended = item
                    break
                batch.append(item)
                if len(batch) >= self._max_batch or self._queue.empty():
                    return batch
                item = self._queue.get_nowait()
            if batch:
                return batch
        if self._ended.error is not None:
            raise self._ended.error
        return None

    async def close(self) -> None:
        """Stop the reader and wait until it has stopped. A cancellation of the caller
        meanwhile reaches the reader too, and is then raised: swallowed with the reader's
        own, it left a stopped watcher watching on, past its client's closing."""
        self._task.cancel()
        try:
            await self._task
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None and current.cancelling():
                raise


async def list_all(
    kube: Kube,
    resource: Resource[T],
    namespace: str | None,
    settings: WatchSettings,
    decoder: msgspec.json.Decoder[List[T]],
) -> tuple[list[T], str]:
    """Every selected object, page by page, and the resourceVersion of the snapshot."""
    items: list[T] = []
    version = ""
    token = ""
    while True:
        query: dict[str, str | int | bool] = {"limit": settings.page_size}
        if resource.label_selector:
            query["labelSelector"] = resource.label_selector
        if token:
            query["continue"] = token
        data = await kube.request(
            "GET", resource.path(namespace), query=query, request_timeout=settings.request_timeout
        )
        try:
            page = decoder.decode(data)
            items.extend(page.items)
            meta = page.metadata
        except msgspec.ValidationError:  # one bad object: keep the others
            raw = _raw_page_decoder.decode(data)
            one = msgspec.json.Decoder(resource.type)
            items.extend(o for r in raw.items if (o := decode_or_skip(one, r)) is not None)
            meta = raw.metadata
        version = version or meta.resource_version
        token = meta.continue_
        if not token:
            return items, version


async def watch(
    kube: Kube,
    resource: Resource[T],
    *,
    namespace: str | None = None,
    settings: WatchSettings | None = None,
    known: Mapping[str, T] | None = None,
) -> AsyncGenerator[list[Change[T]] | Mark, None]:
    """Batches of changes to `resource`, forever; `Mark.LISTED` after each (re)list.

    `known`: objects (by uid) believed to exist before the first list, which reports
    those it lacks as DELETED, as a relist after 410 does.
    """
    settings = settings or WatchSettings()
    bound = log.bind(resource=resource.plural)
    decoder = msgspec.json.Decoder(resource.type)
    # a runtime type argument, which msgspec understands and mypy cannot follow
    list_decoder = msgspec.json.Decoder(List[resource.type])  # type: ignore[name-defined]
    backoff = Backoff(settings.retry)
    known = dict(known or {})
    version = ""  # "" until listed, and again after a 410
    query: dict[str, str | int | bool] = {
        "watch": True,
        "allowWatchBookmarks": True,
        "timeoutSeconds": settings.timeout_seconds,
    }
    if resource.label_selector:
        query["labelSelector"] = resource.label_selector
    while True:
        try:
            if not version:
                objects, listed_version = await list_all(
                    kube, resource, namespace, settings, list_decoder
                )
                changes = relisted(known, objects)
                bound.info("listed", objects=len(objects), changes=len(changes))
                for start in range(0, len(changes), settings.max_batch):
                    chunk = changes[start : start + settings.max_batch]
                    yield chunk
                    remember(known, chunk)
                version = listed_version
                yield Mark.LISTED
            async with kube.stream(
                resource.path(namespace),
                {**query, "resourceVersion": version},
                request_timeout=settings.timeout_seconds + settings.request_timeout,
            ) as lines:
                backoff.reset()
                reader = _ReadAhead(lines, settings.max_batch)
                try:
                    while (batch := await reader.next_batch()) is not None:
                        parsed = parse(batch, decoder)
                        if parsed.changes:
                            yield parsed.changes
                            remember(known, parsed.changes)
                        version = parsed.resource_version or version
                        if parsed.error is not None:
                            raise parsed.error
                finally:
                    await reader.close()
        except RETRYABLE as exc:
            if isinstance(exc, Gone) or (isinstance(exc, KubeError) and exc.status == 410):
                bound.info("history expired, listing again", error=str(exc))
                version = ""
            else:
                delay = backoff.next_delay()
                report(bound, exc, delay)
                await asyncio.sleep(delay)


async def list_all_retried(
    kube: Kube,
    resource: Resource[T],
    namespace: str | None,
    settings: WatchSettings,
    decoder: msgspec.json.Decoder[List[T]],
) -> list[T]:
    """`list_all`, retried as a watch retries its list: a list made beside the watches
    (the Jobs a pod listing is matched with) must not stop the watchers on a 500 either."""
    bound = log.bind(resource=resource.plural)

    async def listed() -> list[T]:
        return (await list_all(kube, resource, namespace, settings, decoder))[0]

    return await retry(
        listed,
        delays=settings.retry,
        transient=lambda exc: isinstance(exc, RETRYABLE),
        on_retry=lambda exc, delay: report(bound, exc, delay),
    )


def report(bound: structlog.typing.FilteringBoundLogger, exc: Exception, delay: float) -> None:
    """Log a failed list or watch, tried again after `delay` seconds."""
    temporary = not isinstance(exc, KubeError) or exc.temporary
    (bound.warning if temporary else bound.error)(
        "watch failed, retrying", error=f"{type(exc).__name__}: {exc}", delay=round(delay, 2)
    )
