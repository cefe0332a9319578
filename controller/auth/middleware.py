"""Who is asking, and whether they may: the one aiohttp middleware of both HTTP servers.

Each route has an `Access`. Without an authenticator every caller is answered, so a server
without one listens on a loopback address only (`is_loopback`: each server refuses another
address at start). With one, a request carries its token as `Authorization: Bearer TOKEN`
(or, from a page of a server with a `SignIn`, in its cookie); the authenticator turns it
into a `Viewer`. No valid token is a 401, `/metrics` without the right to `get` it a 403, a
token that cannot be checked now a 503. Handlers ask the request's viewer (`viewer_of`)
which namespaces it may read.

Health and readiness are answered without a token, as k8s.io/apiserver's delegating
authorizer always allows /healthz, /readyz and /livez (`NewDelegatingAuthorizationOptions`,
`AlwaysAllowPaths`) and Kubernetes lets system:unauthenticated get them (the ClusterRole
`system:public-info-viewer`): the kubelet's probes carry no token, and they hold no job data.
"""

from __future__ import annotations

import enum
import ipaddress
from collections.abc import Callable, Collection
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol
from urllib.parse import unquote

import msgspec
from aiohttp import web
from aiohttp.typedefs import Handler, Middleware
from yarl import URL

from lavalog.controller.kube import Kube


class Access(enum.Enum):
    """Who may call a route."""

    #: the kubelet's probes: always answered, no token asked for
    PROBE = "probe"
    #: Prometheus: with Kubernetes authentication, a token whose user RBAC lets `get` the
    #: path (a `nonResourceURLs` rule); open to the holder of no token only where an
    #: authenticator says so (the projections' shared token)
    METRICS = "metrics"
    #: everything else: a valid token; job data only of the namespaces the caller may read
    READ = "read"


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

    async def may_command(self, namespace: str) -> bool:
        """Whether it may create Volcano Commands (suspend, resume, restart) in `namespace`."""
        ...

    def as_caller(self) -> AbstractAsyncContextManager[Kube]:
        """A Kubernetes client that speaks as this caller (its own token), to act for it."""
        ...


class Everyone:
    """The viewer of a server without authentication, or of a shared token: reads
    everything, and acts on nothing (there is no Kubernetes identity to act as)."""

    name = "anyone"

    async def may_read(self, namespace: str) -> bool:
        return True

    async def readable(self, namespaces: Collection[str]) -> frozenset[str] | None:
        return None

    async def may_scrape(self, path: str) -> bool:
        return True

    async def may_command(self, namespace: str) -> bool:
        return False  # no Kubernetes identity to act with

    def as_caller(self) -> AbstractAsyncContextManager[Kube]:
        raise PermissionError("no Kubernetes identity to act as: that needs --kubernetes-auth")


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


@dataclass(frozen=True)
class SignIn:
    """How a browser signs in to a server with pages (the projections' UI): a page load or
    an EventSource cannot set a header, so the token travels in a cookie that a sign-in
    page sets; that page is the 401 a browser gets for a page, and its own files are
    answered without a token."""

    #: the cookie that carries the token
    cookie: str
    #: the page answered (401) to a browser asking for a page without a valid token
    page: Path
    #: what the page loads
    files: frozenset[str]
    #: paths under this prefix are the JSON API: answered in JSON, even to a browser
    api: str


def viewer_of(request: web.Request) -> Viewer:
    """The viewer the middleware found for this request."""
    return request[_VIEWER]


def _presented(request: web.Request, *, cookie: str | None = None) -> tuple[bytes | None, bool]:
    """The token the request carries: the Authorization header's, else the `cookie`'s; and
    whether it came from the cookie (which a browser sends by itself)."""
    header = request.headers.get("Authorization", "")
    scheme, _, value = header.partition(" ")
    if scheme.lower() == "bearer" and value.strip():
        return value.strip().encode(), False
    kept = request.cookies.get(cookie) if cookie is not None else None
    return (unquote(kept).encode(), True) if kept else (None, False)


#: methods a browser may send across sites without asking (they change nothing here)
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def same_origin(request: web.Request) -> bool:
    """Whether the request's `Origin` is this server (its host and port, as the browser
    addressed it: the Host header). A browser sends Origin with every POST, its own
    pages' included; a page of another site cannot forge it."""
    origin = request.headers.get("Origin", "")
    if not origin or origin == "null":
        return False
    try:
        claimed = URL(origin)
    except ValueError:
        return False
    return (claimed.host_port_subcomponent or "").lower() == request.host.lower()


def auth_middleware(
    authenticator: Authenticator | None,
    *,
    access_of: Callable[[web.Request], Access],
    sign_in: SignIn | None = None,
) -> Middleware:
    """Find each request's viewer (401 without a valid token, 403 for /metrics without
    the right to get it); without an authenticator, everyone reads everything."""
    files = sign_in.files if sign_in is not None else frozenset()
    cookie = sign_in.cookie if sign_in is not None else None

    @web.middleware
    async def authenticate(request: web.Request, handler: Handler) -> web.StreamResponse:
        access = access_of(request)
        if authenticator is None or access in authenticator.open or request.path in files:
            request[_VIEWER] = EVERYONE
            return await handler(request)
        given, from_cookie = _presented(request, cookie=cookie)
        if from_cookie and request.method not in SAFE_METHODS and not same_origin(request):
            # a cross-site request forgery: the browser sent the cookie by itself
            return _error(403, f"{request.method} {request.path} from another site refused")
        try:
            viewer = await authenticator.authenticate(given) if given is not None else None
            if viewer is None:
                return _unauthorized(request, wrong=given is not None, sign_in=sign_in)
            request[_VIEWER] = viewer
            if access is Access.METRICS and not await viewer.may_scrape(request.path):
                return _error(403, forbidden_path(viewer, request.path))
            return await handler(request)
        except ReviewUnavailable as exc:
            return _error(503, f"cannot check who is asking: {exc}")

    return authenticate


def forbidden_path(viewer: Viewer, path: str) -> str:
    """Why a 403, in the words of a Kubernetes API server refusing the same `get`."""
    return f'forbidden: User "{viewer.name}" cannot get path "{path}"'


def is_loopback(host: str) -> bool:
    """Whether a server listening on `host` answers this machine only."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _unauthorized(request: web.Request, *, wrong: bool, sign_in: SignIn | None) -> web.Response:
    challenge = 'Bearer realm="lavalog"' + (', error="invalid_token"' if wrong else "")
    headers = {"WWW-Authenticate": challenge}
    if (
        sign_in is not None
        and not request.path.startswith(sign_in.api)
        and "text/html" in request.headers.get("Accept", "")
    ):
        return web.Response(
            status=401, headers=headers, body=sign_in.page.read_bytes(), content_type="text/html"
        )
    message = "the token is not valid" if wrong else f"{request.path} needs a token"
    response = _error(401, f"{message}: send Authorization: Bearer TOKEN")
    response.headers.update(headers)
    return response


def _error(status: int, message: str) -> web.Response:
    body = msgspec.json.encode({"error": message})
    return web.Response(status=status, body=body, content_type="application/json")
