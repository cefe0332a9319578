"""Who is asking, and what they may read: the API's authentication and authorization.

Three ways to run, one middleware:

- no authentication: every caller reads everything; the server then listens on this
  machine only (`app.check_exposure`);
- a shared token (`--token-file`, for development): one bearer token, from a file that
  is read again when it changes (a rotated Secret needs no restart); whoever holds it
  reads everything; probes and `/metrics` stay open;
- Kubernetes (`--kubernetes-auth`, the manifests): each caller's own bearer token, reviewed
  by the API server; they read the jobs of the namespaces where RBAC lets them `get`
  `jobs.batch.volcano.sh` (projections/service/http/kube_auth.py).

A request carries its token as `Authorization: Bearer TOKEN`, or, from the browser UI
(which cannot set a header on a page load or an EventSource), as the `lavalog_token`
cookie that the UI's sign-in page sets. The handlers ask the request's `Viewer` which
namespaces it may read (`viewer_of`), in lists, counts, the stream, events and what-if.
"""

from __future__ import annotations

import hmac
import os
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Protocol
from urllib.parse import unquote

import msgspec
from aiohttp import web
from aiohttp.typedefs import Handler, Middleware

from lavalog.projections.service.http.openapi import Access

COOKIE = "lavalog_token"

#: the page a browser gets instead of the UI while it has no valid token
SIGN_IN_PAGE = Path(__file__).parent / "ui" / "sign-in.html"
#: what the sign-in page itself loads, answered without a token
SIGN_IN_FILES = frozenset({"/ui/sign-in.js", "/ui/sign-in.css"})


class ReviewUnavailable(Exception):
    """The token or an access could not be reviewed (the Kubernetes API did not answer):
    answered 503, never cached."""


class Viewer(Protocol):
    """What one authenticated caller may read."""

    @property
    def name(self) -> str:
        """Who it is, for messages (`alice`, `system:serviceaccount:team-a:reader`)."""
        ...

    async def may_read(self, namespace: str) -> bool:
        """Whether it may read the jobs of `namespace` ("" : of every namespace)."""
        ...

    async def readable(self, namespaces: Collection[str]) -> frozenset[str] | None:
        """Which of `namespaces` it may read; None when it may read every namespace."""
        ...

    async def may_scrape(self, path: str) -> bool:
        """Whether it may `get` this path outside the API (`/metrics`)."""
        ...


class Everyone:
    """The viewer of a server without authentication, or of the shared token: everything."""

    name = "anyone"

    async def may_read(self, namespace: str) -> bool:
        return True

    async def readable(self, namespaces: Collection[str]) -> frozenset[str] | None:
        return None

    async def may_scrape(self, path: str) -> bool:
        return True


EVERYONE = Everyone()

_VIEWER = web.RequestKey("viewer", Viewer)


class Authenticator(Protocol):
    """Turns a bearer token into a viewer."""

    #: the routes it answers without a token
    open: frozenset[Access]

    async def authenticate(self, token: bytes) -> Viewer | None:
        """The token's viewer; None for a token that is not valid. ReviewUnavailable when
        that cannot be known now."""
        ...


class TokenFile:
    """The token in a file, re-read when the file changes (a rotated Secret)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._stamp: tuple[int, int] | None = None
        self._token = b""
        self.current()  # a missing or empty file is an error at start, not at first request

    def current(self) -> bytes:
        try:
            stat = os.stat(self.path)
        except OSError as exc:
            raise ValueError(f"token file {self.path}: {exc.strerror}") from None
        stamp = (stat.st_mtime_ns, stat.st_size)
        if stamp != self._stamp:
            token = self.path.read_bytes().strip()
            if not token:
                raise ValueError(f"token file {self.path} is empty")
            self._token, self._stamp = token, stamp
        return self._token


class SharedToken:
    """One token for everybody (development): its holder reads everything."""

    open = frozenset({Access.PROBE, Access.METRICS})

    def __init__(self, token: TokenFile) -> None:
        self._token = token

    async def authenticate(self, token: bytes) -> Viewer | None:
        # compare_digest: the time taken does not tell how much of a guess was right
        return EVERYONE if hmac.compare_digest(token, self._token.current()) else None


def viewer_of(request: web.Request) -> Viewer:
    """The viewer the middleware found for this request."""
    return request[_VIEWER]


def presented(request: web.Request) -> bytes | None:
    """The token the request carries: the Authorization header's, else the UI's cookie."""
    header = request.headers.get("Authorization", "")
    scheme, _, value = header.partition(" ")
    if scheme.lower() == "bearer" and value.strip():
        return value.strip().encode()
    cookie = request.cookies.get(COOKIE)
    return unquote(cookie).encode() if cookie else None


def auth_middleware(
    authenticator: Authenticator | None, *, access_of: Callable[[web.Request], Access]
) -> Middleware:
    """Find each request's viewer (401 without a valid token, 403 for /metrics without
    the right to get it); without an authenticator, everyone reads everything."""

    @web.middleware
    async def authenticate(request: web.Request, handler: Handler) -> web.StreamResponse:
        access = access_of(request)
        if authenticator is None or access in authenticator.open or request.path in SIGN_IN_FILES:
            request[_VIEWER] = EVERYONE
            return await handler(request)
        given = presented(request)
        try:
            viewer = await authenticator.authenticate(given) if given is not None else None
            if viewer is None:
                return _unauthorized(request, wrong=given is not None)
            request[_VIEWER] = viewer
            if access is Access.METRICS and not await viewer.may_scrape(request.path):
                return _error(403, forbidden_path(viewer, request.path))
            return await handler(request)
        except ReviewUnavailable as exc:
            return _error(503, f"cannot check who is asking: {exc}")

    return authenticate


def forbidden_namespace(viewer: Viewer, namespace: str) -> str:
    """Why a 403, in the words of a Kubernetes API server refusing the same `get`."""
    where = f'in the namespace "{namespace}"' if namespace else "at the cluster scope"
    return (
        f'jobs.batch.volcano.sh is forbidden: User "{viewer.name}" cannot get resource'
        f' "jobs" in API group "batch.volcano.sh" {where}'
    )


def forbidden_path(viewer: Viewer, path: str) -> str:
    return f'forbidden: User "{viewer.name}" cannot get path "{path}"'


def _unauthorized(request: web.Request, *, wrong: bool) -> web.Response:
    challenge = 'Bearer realm="lavalog"' + (', error="invalid_token"' if wrong else "")
    headers = {"WWW-Authenticate": challenge}
    message = "the token is not valid" if wrong else "this API needs a token"
    if not request.path.startswith("/api/") and "text/html" in request.headers.get("Accept", ""):
        return web.Response(
            status=401, headers=headers, body=SIGN_IN_PAGE.read_bytes(), content_type="text/html"
        )
    response = _error(401, f"{message}: send Authorization: Bearer TOKEN")
    response.headers.update(headers)
    return response


def _error(status: int, message: str) -> web.Response:
    body = msgspec.json.encode({"error": message})
    return web.Response(status=status, body=body, content_type="application/json")
