"""The HTTP API under `/api/v1/`, plus `/metrics`, `/healthz` and `/readyz`.

Handlers only parse, ask `Queries` (in a worker thread: SQLite blocks) and encode. The
raw events are passed through as stored, byte for byte, so the audit trail a client
reads is exactly what was on the topics.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import msgspec
from aiohttp import web
from aiohttp.http_exceptions import BadHttpMessage
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from events.codec import encode
from events.timestamps import from_rfc3339
from events.topics import job_key
from projections.live import LiveHub, StreamFilter
from projections.metrics import registry_for
from projections.queries import MAX_PAGE, JobFilter, Queries, not_found
from projections.whatif import whatif_from_sets

#: An SSE comment this often keeps proxies from closing an idle stream.
HEARTBEAT_SECONDS = 15.0


class FeedStatus(Protocol):
    """What the API reports about the runner feeding the store."""

    @property
    def ready(self) -> bool:
        """The store has caught up with its source once."""
        ...

    @property
    def error(self) -> str | None:
        """Why the feed stopped, if it did."""
        ...

    def lag(self) -> Mapping[tuple[str, int], int]: ...


@dataclass(frozen=True)
class Api:
    queries: Queries
    hub: LiveHub
    status: FeedStatus


API = web.AppKey("api", Api)
REGISTRY = web.AppKey("registry", CollectorRegistry)


class BadRequest(web.HTTPBadRequest):
    def __init__(self, message: str) -> None:
        super().__init__(
            text=msgspec.json.encode({"error": message}).decode(), content_type="application/json"
        )


class RequestLog(logging.LoggerAdapter[logging.Logger]):
    """aiohttp's log of the requests it could not handle (its `logger=`).

    A request it cannot even parse (a URL over 8 KB, a malformed header) is answered 400
    and logged as an error with a traceback, though nothing went wrong on this side: here
    it is one warning line. Everything else is logged as aiohttp logs it."""

    def __init__(self) -> None:
        super().__init__(logging.getLogger("aiohttp.server"))

    def exception(self, msg: object, *args: object, exc_info: Any = True, **kwargs: Any) -> None:
        if isinstance(exc_info, BadHttpMessage):
            reason = exc_info.message.split(":")[0]
            self.warning("bad request from %s answered %d: %s", args[0], exc_info.code, reason)
            return
        super().exception(msg, *args, exc_info=exc_info, **kwargs)


def add_routes(app: web.Application, api: Api) -> None:
    app[API] = api
    app[REGISTRY] = registry_for(api.queries, api.status.lag)
    app.router.add_get("/api/v1/jobs", _jobs)
    app.router.add_get("/api/v1/jobs/{namespace}/{name}", _job)
    app.router.add_get("/api/v1/jobs/{namespace}/{name}/events", _job_events)
    app.router.add_post("/api/v1/jobs/{namespace}/{name}/whatif", _job_whatif)
    app.router.add_get("/api/v1/stats", _stats)
    app.router.add_get("/api/v1/stream", _stream)
    app.router.add_get("/metrics", _metrics)
    app.router.add_get("/healthz", _healthz)
    app.router.add_get("/readyz", _readyz)

    async def close_streams(app: web.Application) -> None:
        api.hub.close()

    app.on_shutdown.append(close_streams)


def _json(value: Any, *, status: int = 200) -> web.Response:
    return web.Response(
        body=msgspec.json.encode(value), status=status, content_type="application/json"
    )


def _time(query: Mapping[str, str], name: str) -> float | None:
    """A time parameter: seconds since the epoch or RFC 3339."""
    text = query.get(name)
    if not text:
        return None
    try:
        return float(text)
    except ValueError:
        pass
    try:
        return from_rfc3339(text)
    except ValueError:
        raise BadRequest(f"{name}: expected epoch seconds or RFC 3339, not {text!r}") from None


def _int(query: Mapping[str, str], name: str, default: int, low: int, high: int) -> int:
    text = query.get(name)
    if text is None:
        return default
    try:
        value = int(text)
    except ValueError:
        raise BadRequest(f"{name}: expected an integer, not {text!r}") from None
    if not low <= value <= high:
        raise BadRequest(f"{name}: expected {low} to {high}, not {value}")
    return value


def _list(query: Mapping[str, str], name: str) -> tuple[str, ...]:
    return tuple(part for part in query.get(name, "").split(",") if part)


def job_filter(query: Mapping[str, str]) -> JobFilter:
    """The filters shared by the job list and the stats."""
    try:
        return JobFilter(
            namespace=query.get("namespace", ""),
            queue=query.get("queue", ""),
            phases=_list(query, "phase"),
            since=_time(query, "since"),
            until=_time(query, "until"),
            search=query.get("q", ""),
        )
    except ValueError as exc:
        raise BadRequest(str(exc)) from None


async def _jobs(request: web.Request) -> web.Response:
    queries = request.app[API].queries
    where = job_filter(request.query)
    limit = _int(request.query, "limit", 50, 1, MAX_PAGE)
    after = request.query.get("after")
    try:
        page = await asyncio.to_thread(queries.jobs, where, limit=limit, after=after)
    except ValueError:
        raise BadRequest(f"after: not a cursor from this API: {after!r}") from None
    return _json(page)


async def _job(request: web.Request) -> web.Response:
    queries = request.app[API].queries
    key = job_key(request.match_info["namespace"], request.match_info["name"])
    incarnation = request.query.get("incarnation")
    number = _int(request.query, "incarnation", 0, 1, 1 << 30) if incarnation else None
    timeline = await asyncio.to_thread(queries.timeline, key, incarnation=number)
    incarnations = await asyncio.to_thread(queries.incarnations, key)
    if timeline is None:
        return _json({"error": not_found(key, number, len(incarnations))}, status=404)
    as_of = await asyncio.to_thread(queries.log_time)
    return _json({"timeline": timeline, "incarnations": incarnations, "as_of": as_of})


async def _job_events(request: web.Request) -> web.Response:
    queries = request.app[API].queries
    key = job_key(request.match_info["namespace"], request.match_info["name"])
    after = _int(request.query, "after", 0, 0, 1 << 62)
    uid = request.query.get("uid") or None
    events = await asyncio.to_thread(queries.events, key, after=after, uid=uid)
    return _json(
        {
            "events": [
                {"seq": e.seq, "kind": e.kind, "type": e.type, "event": msgspec.Raw(e.body)}
                for e in events
            ]
        }
    )


async def _job_whatif(request: web.Request) -> web.Response:
    """The what-if of one job: body `{"set": ["spec.maxRetry=5", ...]}` (see whatif_from_sets)."""
    queries = request.app[API].queries
    key = job_key(request.match_info["namespace"], request.match_info["name"])
    try:
        body = await request.json()
        sets = body.get("set") if isinstance(body, dict) else None
        if not isinstance(sets, list) or not all(isinstance(s, str) for s in sets):
            raise ValueError('the body must be {"set": ["spec.FIELD=VALUE", ...]}')
        stored = await asyncio.to_thread(queries.events, key)
        if not stored:
            return _json({"error": f"no events of {key}"}, status=404)
        report = await asyncio.to_thread(whatif_from_sets, [e.body for e in stored], sets)
    except ValueError as exc:  # JSON bodies and --set texts alike
        raise BadRequest(str(exc)) from None
    return _json(report)


async def _stats(request: web.Request) -> web.Response:
    queries = request.app[API].queries
    return _json(await asyncio.to_thread(queries.counts, job_filter(request.query)))


async def _stream(request: web.Request) -> web.StreamResponse:
    """Server-Sent Events: `id` is the store's sequence number, `event` the event type."""
    api = request.app[API]
    wanted = StreamFilter(
        key=request.query.get("job", ""),
        namespace=request.query.get("namespace", ""),
        types=frozenset(_list(request.query, "type")),
    )
    response = web.StreamResponse(
        headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
    )
    await response.prepare(request)
    async with api.hub.subscribe(wanted) as queue:
        try:
            await response.write(b": stream open\n\n")  # subscribed: nothing stored is missed
            while True:
                try:
                    item = await asyncio.wait_for(queue.get(), HEARTBEAT_SECONDS)
                except TimeoutError:
                    await response.write(b": heartbeat\n\n")
                    continue
                if item is None:
                    break
                name = type(item.event).__name__
                data = item.raw if b"\n" not in item.raw else encode(item.event)
                await response.write(
                    b"id: %d\nevent: %s\ndata: %s\n\n" % (item.seq, name.encode(), data)
                )
        except ConnectionResetError:
            pass  # the client left (a closed tab, a page that moved on): nothing went wrong
    return response


async def _metrics(request: web.Request) -> web.Response:
    body = await asyncio.to_thread(generate_latest, request.app[REGISTRY])
    return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})


async def _healthz(request: web.Request) -> web.Response:
    error = request.app[API].status.error
    if error is not None:
        return _json({"status": "failed", "error": error}, status=503)
    return _json({"status": "ok"})


async def _readyz(request: web.Request) -> web.Response:
    status = request.app[API].status
    if not status.ready:
        return _json({"status": "catching up"}, status=503)
    return _json({"status": "ready"})
