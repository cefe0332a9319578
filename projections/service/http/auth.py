"""An optional bearer token in front of the API and the web UI.

The projections service only reads (its one POST, what-if, computes and changes nothing),
so one shared token is enough: whoever holds it may read every job's history. It comes
from a file (a mounted Secret), which is read again when it changes, so rotating the
Secret needs no restart. A request carries it as `Authorization: Bearer TOKEN`, or, from
the browser UI (which cannot set a header on a page load or an EventSource), as the
`lavalog_token` cookie that the UI's sign-in page sets. Health, readiness and metrics
stay open for probes and scrapers (`Route.public`).
"""

from __future__ import annotations

import hmac
import os
from collections.abc import Collection
from pathlib import Path
from urllib.parse import unquote

import msgspec
from aiohttp import web
from aiohttp.typedefs import Handler, Middleware

COOKIE = "lavalog_token"

#: the page a browser gets instead of the UI while it has no valid token
SIGN_IN_PAGE = Path(__file__).parent / "ui" / "sign-in.html"


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


def presented(request: web.Request) -> bytes | None:
    """The token the request carries: the Authorization header's, else the UI's cookie."""
    header = request.headers.get("Authorization", "")
    scheme, _, value = header.partition(" ")
    if scheme.lower() == "bearer" and value.strip():
        return value.strip().encode()
    cookie = request.cookies.get(COOKIE)
    return unquote(cookie).encode() if cookie else None


def token_middleware(token: TokenFile, *, public: Collection[str]) -> Middleware:
    """Answer 401 to requests without the token, except on the `public` paths."""

    @web.middleware
    async def require_token(request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.path in public:
            return await handler(request)
        given = presented(request)
        # compare_digest: the time taken does not tell how much of a guess was right
        if given is not None and hmac.compare_digest(given, token.current()):
            return await handler(request)
        return _unauthorized(request, given is not None)

    return require_token


def _unauthorized(request: web.Request, wrong: bool) -> web.Response:
    challenge = 'Bearer realm="lavalog"' + (', error="invalid_token"' if wrong else "")
    headers = {"WWW-Authenticate": challenge}
    message = "the token is not valid" if wrong else "this API needs a token"
    if not request.path.startswith("/api/") and "text/html" in request.headers.get("Accept", ""):
        return web.Response(
            status=401, headers=headers, body=SIGN_IN_PAGE.read_bytes(), content_type="text/html"
        )
    body = msgspec.json.encode({"error": f"{message}: send Authorization: Bearer TOKEN"})
    return web.Response(status=401, headers=headers, body=body, content_type="application/json")
