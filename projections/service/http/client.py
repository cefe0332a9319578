"""The projections API as the read commands' source: `--server URL` instead of a store.

`RemoteQueries` answers the same questions as `Queries` over a local store (the methods
the read commands use, with the same types), by asking a `lavalog projections serve`
over HTTP, so every read command works on a workstation against the cluster's service.
Times come back from their RFC 3339 form (projections/core/wire.py); events byte for byte.
"""

from __future__ import annotations

import urllib.error
import urllib.parse
import urllib.request
from typing import Any

import msgspec

from lavalog.events.topics import split_job_key
from lavalog.projections.core.summary import JobSummary
from lavalog.projections.core.timeline import Timeline
from lavalog.projections.core.wire import from_wire
from lavalog.projections.service.http.api import JobAnswer
from lavalog.projections.service.store.queries import MAX_PAGE, JobFilter, Page, StoredEvent


class ServerUnavailable(Exception):
    """The server could not be reached, refused the token, or failed: nothing to read."""


class ServerRefused(Exception):
    """The server answered 400: what was asked is malformed (the message says why)."""


class _RawEvent(msgspec.Struct, frozen=True):
    seq: int
    kind: str
    type: str
    event: msgspec.Raw


class _RawEvents(msgspec.Struct, frozen=True):
    events: list[_RawEvent]


class RemoteQueries:
    """Read-only questions to a projections API at `server` (`http://host:port`)."""

    def __init__(self, server: str, *, token: bytes | None = None, timeout: float = 30.0) -> None:
        if not server.startswith(("http://", "https://")):
            raise ServerRefused(f"--server {server!r}: expected http://HOST:PORT or https://...")
        self.server = server.rstrip("/")
        self._token = token
        self._timeout = timeout

    def jobs(self, where: JobFilter, *, limit: int = 50, after: str | None = None) -> Page:
        params: dict[str, Any] = {
            "namespace": where.namespace,
            "queue": where.queue,
            "phase": ",".join(where.phases),
            "since": where.since,
            "until": where.until,
            "q": where.search,
            "limit": limit,
            "after": after,
        }
        return from_wire(self._get("/api/v1/jobs", params), Page)

    def timeline(self, key: str, *, incarnation: int | None = None) -> Timeline | None:
        answer = self._job(key, incarnation)
        return answer.timeline if answer is not None else None

    def incarnations(self, key: str) -> list[JobSummary]:
        answer = self._job(key, None)
        return list(answer.incarnations) if answer is not None else []

    def events(self, key: str, *, after: int = 0, uid: str | None = None) -> list[StoredEvent]:
        data = self._get(f"{_job_path(key)}/events", {"after": after or None, "uid": uid}, raw=True)
        answer = msgspec.json.decode(data, type=_RawEvents)
        return [
            StoredEvent(seq=e.seq, kind=e.kind, type=e.type, body=bytes(e.event))
            for e in answer.events
        ]

    def keys(self) -> list[str]:
        """Every job key the server holds (the job list, a page at a time)."""
        keys: set[str] = set()
        after = None
        while True:
            page = self.jobs(JobFilter(), limit=MAX_PAGE, after=after)
            keys.update(job.key for job in page.jobs)
            if page.next is None:
                return sorted(keys)
            after = page.next

    def _job(self, key: str, incarnation: int | None) -> JobAnswer | None:
        data = self._get(_job_path(key), {"incarnation": incarnation}, missing_ok=True)
        return None if data is None else from_wire(data, JobAnswer)

    def _get(
        self, path: str, params: dict[str, Any], *, missing_ok: bool = False, raw: bool = False
    ) -> Any:
        query = urllib.parse.urlencode({k: v for k, v in params.items() if v not in (None, "")})
        url = f"{self.server}{path}" + (f"?{query}" if query else "")
        request = urllib.request.Request(url, headers={"Accept": "application/json"})
        if self._token is not None:
            request.add_header("Authorization", f"Bearer {self._token.decode()}")
        try:
            with urllib.request.urlopen(request, timeout=self._timeout) as response:
                body: bytes = response.read()
        except urllib.error.HTTPError as exc:
            if exc.code == 404 and missing_ok:
                return None
            raise _http_error(self.server, exc) from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise ServerUnavailable(f"cannot reach {self.server}: {reason}") from None
        return body if raw else msgspec.json.decode(body)


def _job_path(key: str) -> str:
    namespace, name = split_job_key(key)
    quoted = (urllib.parse.quote(part, safe="") for part in (namespace, name))
    return "/api/v1/jobs/{}/{}".format(*quoted)


def _http_error(server: str, error: urllib.error.HTTPError) -> Exception:
    try:
        message = msgspec.json.decode(error.read()).get("error", "")
    except (msgspec.DecodeError, AttributeError):
        message = ""
    if error.code == 400:
        return ServerRefused(message or "the server refused the request (400)")
    if error.code == 401:
        wrong = "invalid_token" in error.headers.get("WWW-Authenticate", "")
        hint = (
            "check --token-file (an expired token? `kubectl create token` makes a new one)"
            if wrong
            else "pass --token-file FILE (or $LAVALOG_API_TOKEN_FILE): your Kubernetes token,"
            " e.g. from `kubectl create token`, or the server's shared token"
        )
        return ServerUnavailable(f"{server} needs a valid token (401): {hint}")
    if error.code == 403:
        return ServerUnavailable(f"{server} refused (403): {message or error.reason}")
    return ServerUnavailable(f"{server} answered {error.code}: {message or error.reason}")
