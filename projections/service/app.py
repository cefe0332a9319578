"""The projections service: a store fed by a source, served over HTTP.

`create_app` is the web application alone (tests drive it with aiohttp's client);
`serve` runs it with the replica that feeds the store (or follows the replica that
does, `projections.service.replica`), until cancelled; it returns once the batch in flight has
committed, the store is closed and the server has closed.

The server is hardened as a browser and the network expect: every answer carries a
Content-Security-Policy that lets the UI load only its own files, `nosniff`, a refusal
to be framed and a `Server` header without versions; a connection that has not sent a
complete request head within `HEADER_TIMEOUT` seconds (of opening, or of its previous
answer) is closed, as Kubernetes' API server closes one (`ReadHeaderTimeout`); event
streams are capped (`live.MAX_STREAMS`). Without authentication it listens on this
machine only (`check_exposure`).
"""

from __future__ import annotations

import asyncio
import errno
from collections.abc import Callable

from aiohttp import web
from aiohttp.typedefs import Middleware

from lavalog.controller.auth.middleware import Access, Authenticator, auth_middleware, is_loopback
from lavalog.projections.service.http import api
from lavalog.projections.service.http import web as ui
from lavalog.projections.service.http.auth import SIGN_IN
from lavalog.projections.service.live import LiveHub
from lavalog.projections.service.replica import Replica
from lavalog.projections.service.runner import Source
from lavalog.projections.service.store.database import Location
from lavalog.projections.service.store.queries import Queries
from lavalog.projections.service.store.writer import Store

#: seconds a connection may take to send a request head (k8s.io/apiserver's
#: `ReadHeaderTimeout` is 32 s), and may stay idle between requests
HEADER_TIMEOUT = 32.0

#: sent with every answer of the app
SECURITY_HEADERS = {
    # the UI's own scripts, styles and API calls only: no inline script, no framing
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self';"
        " connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    # no name and version of the Python and aiohttp behind it
    "Server": "lavalog",
}

_ACCESS = web.AppKey("access", dict[str, Access])


class ServeError(Exception):
    """The server cannot start as asked; the message says why and what to do (one line)."""


def check_exposure(host: str, *, authenticated: bool) -> None:
    """Refuse to serve other machines without authentication (ServeError)."""
    if authenticated or is_loopback(host):
        return
    raise ServeError(
        f"--host {host or '0.0.0.0'} would serve every job's history to any machine that can"
        " reach it, unauthenticated: pass --kubernetes-auth (Kubernetes tokens and RBAC) or"
        " --token-file FILE, or keep the default --host 127.0.0.1"
    )


def create_app(
    *,
    queries: Queries,
    hub: LiveHub,
    status: api.FeedStatus,
    authenticator: Authenticator | None = None,
    version: str = "unknown",
) -> web.Application:
    """The API and the UI; with an `authenticator`, each request's token decides what it
    may read (projections/service/http/auth.py)."""
    middlewares: list[Middleware] = [
        auth_middleware(authenticator, access_of=_access_of, sign_in=SIGN_IN)
    ]
    app = web.Application(middlewares=middlewares)
    app[_ACCESS] = {route.path: route.access for route in api.ROUTES}
    api.add_routes(app, api.Api(queries=queries, hub=hub, status=status), version=version)
    ui.add_routes(app)
    app.on_response_prepare.append(_secure)
    return app


def _access_of(request: web.Request) -> Access:
    resource = request.match_info.route.resource
    path = resource.canonical if resource is not None else ""
    return request.app[_ACCESS].get(path, Access.READ)


async def _secure(request: web.Request, response: web.StreamResponse) -> None:
    response.headers.update(SECURITY_HEADERS)


async def serve(
    *,
    location: Location,
    open_store: Callable[[], Store],
    source: Source,
    host: str,
    port: int,
    authenticator: Authenticator | None = None,
    max_streams: int | None = None,
    header_timeout: float = HEADER_TIMEOUT,
    version: str = "unknown",
    started: Callable[[str], None] = lambda url: None,
) -> None:
    """Feed the store at `location` (opened with `open_store`) and serve it until
    cancelled; `started` gets the URL once listening. ServeError, before anything is
    served, for a host that needs authentication or a port that is taken."""
    check_exposure(host, authenticated=authenticator is not None)
    hub = LiveHub() if max_streams is None else LiveHub(max_streams=max_streams)
    queries = Queries(location)
    replica = Replica(open_store, source, queries, hub)
    app = create_app(
        queries=queries, hub=hub, status=replica, authenticator=authenticator, version=version
    )
    # keepalive_timeout: aiohttp closes a connection that has no complete request head
    # this long after it opened or after its previous answer (tests/projections/service/
    # test_hardening.py pins it)
    site_runner = web.AppRunner(app, logger=api.RequestLog(), keepalive_timeout=header_timeout)
    await site_runner.setup()
    try:
        await _listen(site_runner, host, port)
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


async def _listen(site_runner: web.AppRunner, host: str, port: int) -> None:
    try:
        await web.TCPSite(site_runner, host, port).start()
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise ServeError(
                f"port {port} on {host} is in use (another server?): choose another with --port"
            ) from None
        raise ServeError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None


def url_of(site_runner: web.AppRunner, host: str) -> str:
    """The URL a browser opens (the real port when 0 was asked for)."""
    port = site_runner.addresses[0][1]
    shown = "127.0.0.1" if host in ("0.0.0.0", "") else host
    return f"http://{shown}:{port}/"
