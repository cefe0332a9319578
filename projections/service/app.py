"""The projections service: a store fed by a source, served over HTTP.

`create_app` is the web application alone (tests drive it with aiohttp's client);
`serve` runs it with the replica that feeds the store (or follows the replica that
does, `projections.service.replica`), until cancelled; it returns once the batch in flight has
committed, the store is closed and the server has closed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from aiohttp import web
from aiohttp.typedefs import Middleware

from lavalog.projections.service.http import api
from lavalog.projections.service.http import web as ui
from lavalog.projections.service.http.auth import TokenFile, token_middleware
from lavalog.projections.service.live import LiveHub
from lavalog.projections.service.replica import Replica
from lavalog.projections.service.runner import Source
from lavalog.projections.service.store.database import Location
from lavalog.projections.service.store.queries import Queries
from lavalog.projections.service.store.writer import Store


def create_app(
    *,
    queries: Queries,
    hub: LiveHub,
    status: api.FeedStatus,
    token: TokenFile | None = None,
    version: str = "unknown",
) -> web.Application:
    """The API and the UI; with a `token`, only requests that carry it get past the
    probes and metrics (projections/service/http/auth.py)."""
    middlewares: list[Middleware] = []
    if token is not None:
        public = {route.path for route in api.ROUTES if route.public}
        middlewares.append(token_middleware(token, public=public))
    app = web.Application(middlewares=middlewares)
    api.add_routes(app, api.Api(queries=queries, hub=hub, status=status), version=version)
    ui.add_routes(app)
    return app


async def serve(
    *,
    location: Location,
    open_store: Callable[[], Store],
    source: Source,
    host: str,
    port: int,
    token: TokenFile | None = None,
    version: str = "unknown",
    started: Callable[[str], None] = lambda url: None,
) -> None:
    """Feed the store at `location` (opened with `open_store`) and serve it until
    cancelled; `started` gets the URL once listening."""
    hub = LiveHub()
    queries = Queries(location)
    replica = Replica(open_store, source, queries, hub)
    site_runner = web.AppRunner(
        create_app(queries=queries, hub=hub, status=replica, token=token, version=version),
        logger=api.RequestLog(),
    )
    await site_runner.setup()
    try:
        site = web.TCPSite(site_runner, host, port)
        await site.start()
        started(url_of(site_runner, host))
        feed = asyncio.create_task(replica.run())
        try:
            await feed
            await asyncio.Event().wait()  # a file has ended: keep serving what it held
        finally:
            feed.cancel()
            # the batch in flight commits, then the store closes
            await asyncio.gather(feed, return_exceptions=True)
    finally:
        await site_runner.cleanup()
        queries.close()


def url_of(site_runner: web.AppRunner, host: str) -> str:
    """The URL a browser opens (the real port when 0 was asked for)."""
    port = site_runner.addresses[0][1]
    shown = "127.0.0.1" if host in ("0.0.0.0", "") else host
    return f"http://{shown}:{port}/"
