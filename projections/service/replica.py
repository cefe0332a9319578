"""One replica of the projections service: the store's writer, or a follower of it.

A store has one writer (`store.database`). A replica that opens the store while
another writes it (`NotLeader`: a second API replica on one PostgreSQL database) serves
reads from the shared database and follows the writer: it polls the events table for
sequence numbers past the last it published and hands them to its live stream, so its
SSE clients see what the writer applied one poll later. It tries to become the writer
at every poll; when the writer's process or connection goes, so does its lock, and the
follower takes over: one last poll (the old writer's last commit), then it opens the
store and feeds it from the stored positions, as the writer before it did.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping

import structlog

from lavalog.events.codec import decode_event
from lavalog.projections.core.feed import Applied
from lavalog.projections.service.live import LiveHub
from lavalog.projections.service.runner import Runner, Source
from lavalog.projections.service.store.database import NotLeader, StoreUnreachable
from lavalog.projections.service.store.queries import Queries
from lavalog.projections.service.store.writer import Store

log = structlog.get_logger(__name__)

#: seconds between a follower's polls of the log (and attempts to become the writer)
POLL_SECONDS = 0.5
#: events a follower reads at a time
FOLLOW_BATCH = 5_000


class Replica:
    """Feeds the store if it may write it, else follows; its attributes are the API's status."""

    def __init__(
        self,
        open_store: Callable[[], Store],
        source: Source,
        queries: Queries,
        hub: LiveHub,
        *,
        poll_seconds: float = POLL_SECONDS,
    ) -> None:
        """`open_store` raises `NotLeader` while another process writes the store."""
        self._open_store = open_store
        self._source = source
        self._queries = queries
        self._hub = hub
        self._poll_seconds = poll_seconds
        self._runner: Runner | None = None
        self._error: str | None = None
        #: following: the last sequence number published (None: writing or opening)
        self._followed: int | None = None

    @property
    def ready(self) -> bool:
        """The writer once it caught up with its source; a follower at once (the store it
        reads is the writer's)."""
        return self._runner.ready if self._runner is not None else self._followed is not None

    @property
    def error(self) -> str | None:
        return self._runner.error if self._runner is not None else self._error

    def lag(self) -> Mapping[tuple[str, int], int]:
        return self._runner.lag() if self._runner is not None else {}

    async def run(self) -> None:
        """Follow until this replica may write, then feed the store until cancelled (the
        batch in flight commits first) or the source ends; the store is closed on return."""
        store = await self._open_when_leading()
        try:
            if self._followed is not None:
                await self._follow()  # what the writer before committed last
                log.info("this replica writes the store now")
            self._runner = Runner(store, self._source, self._hub)
            self._followed = None
            await self._runner.run()
        finally:
            await asyncio.to_thread(store.close)

    async def _open_when_leading(self) -> Store:
        while True:
            opening = asyncio.ensure_future(asyncio.to_thread(self._open_store))
            try:
                return await asyncio.shield(opening)
            except NotLeader as exc:
                if self._followed is None:  # from now on, not from the beginning
                    self._followed = await asyncio.to_thread(self._queries.last_seq)
                    log.info("another replica writes the store: following it", reason=str(exc))
            except StoreUnreachable as exc:  # /healthz says so until the database is back
                if self._error is None:
                    log.warning("cannot reach the store", error=str(exc))
                self._error = str(exc)
                await asyncio.sleep(self._poll_seconds)
                continue
            except asyncio.CancelledError:  # the store may open meanwhile: close it
                store = await _settled(opening)
                if store is not None:
                    await asyncio.to_thread(store.close)
                raise
            await self._follow()
            await asyncio.sleep(self._poll_seconds)

    async def _follow(self) -> None:
        """Publish the events committed since the last poll."""
        assert self._followed is not None
        try:
            while True:
                stored = await asyncio.to_thread(self._queries.log, self._followed, FOLLOW_BATCH)
                if stored:
                    self._hub.publish(Applied(e.seq, decode_event(e.body), e.body) for e in stored)
                    self._followed = stored[-1].seq
                if len(stored) < FOLLOW_BATCH:
                    break
            self._error = None
        except Exception as exc:  # the database went away: /healthz says so until it is back
            self._error = f"{type(exc).__name__}: {exc}"
            log.warning("cannot follow the store", error=self._error)


async def _settled(opening: asyncio.Future[Store]) -> Store | None:
    """What a cancelled open gave once its thread finished (None: it failed)."""
    while not opening.done():
        try:
            await asyncio.shield(opening)
        except asyncio.CancelledError:
            continue
        except Exception:
            return None
    return None if opening.cancelled() or opening.exception() else opening.result()
