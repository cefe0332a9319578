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

from lavalog.controller.auth.kubernetes import COMMANDS
from lavalog.controller.auth.middleware import (
    EVERYONE,
    Access,
    ReviewUnavailable,
    Viewer,
    viewer_of,
)
from lavalog.controller.commands import ACTIONS, issue_command
from lavalog.controller.kube import KubeError, is_transient
from lavalog.events.codec import decode_decision, decode_observation, encode
from lavalog.events.observations import JobObserved
from lavalog.events.timestamps import from_rfc3339
from lavalog.events.topics import job_key, split_job_key
from lavalog.projections.core.feed import Applied
from lavalog.projections.core.kube_events import REPORTED_TYPES, KubeEvent, kube_events
from lavalog.projections.core.spec import SpecVersion, spec_versions
from lavalog.projections.core.summary import JobSummary
from lavalog.projections.core.timeline import Timeline
from lavalog.projections.core.whatif import WhatIf, whatif_from_sets
from lavalog.projections.core.wire import Time, to_wire
from lavalog.projections.service.http.auth import forbidden, forbidden_namespace
from lavalog.projections.service.http.metrics import registry_for
from lavalog.projections.service.http.openapi import Error, Handler, Param, Route, document
from lavalog.projections.service.live import LiveHub, StreamFilter, TooManyStreams
from lavalog.projections.service.store.queries import (
    MAX_PAGE,
    PHASES,
    JobFilter,
    Page,
    Queries,
    not_found,
)

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
OPENAPI = web.AppKey("openapi", bytes)


class BadRequest(web.HTTPBadRequest):
    def __init__(self, message: str) -> None:
        super().__init__(
            text=msgspec.json.encode(Error(message)).decode(), content_type="application/json"
        )


class Unavailable(web.HTTPServiceUnavailable):
    def __init__(self, message: str) -> None:
        super().__init__(
            text=msgspec.json.encode(Error(message)).decode(),
            content_type="application/json",
            headers={"Retry-After": "5"},
        )


class NotFound(web.HTTPNotFound):
    def __init__(self, message: str) -> None:
        super().__init__(
            text=msgspec.json.encode(Error(message)).decode(), content_type="application/json"
        )


class Forbidden(web.HTTPForbidden):
    def __init__(self, message: str) -> None:
        super().__init__(
            text=msgspec.json.encode(Error(message)).decode(), content_type="application/json"
        )


# --- the answers' shapes (the OpenAPI document's schemas) ----------------------------


class JobAnswer(msgspec.Struct, frozen=True, kw_only=True):
    """One job incarnation's timeline, every incarnation of its name, and the store's clock."""

    timeline: Timeline
    incarnations: tuple[JobSummary, ...]
    #: the time of the newest event stored: "now" on the log's clock
    as_of: Time | None
    #: the Kubernetes Events the controller recorded on this incarnation of the Job (drawn
    #: from the decisions that produced them: Kubernetes keeps them an hour; a server
    #: older than them sends none)
    kube_events: tuple[KubeEvent, ...] = ()
    #: the caller may suspend, resume and restart the job (RBAC lets them create
    #: `commands.bus.volcano.sh` in its namespace; never without Kubernetes authentication)
    may_command: bool = False


class SpecAnswer(msgspec.Struct, frozen=True, kw_only=True):
    """The specs one job incarnation ran with, one per generation, oldest first."""

    uid: str
    incarnation: int
    specs: tuple[SpecVersion, ...]


#: the commands the job page offers (`lavalog job`'s names for them)
COMMAND_VERBS = ("suspend", "resume", "restart")


class CommandRequest(msgspec.Struct, frozen=True):
    #: suspend (AbortJob), resume (ResumeJob) or restart (RestartJob)
    action: str


class CommandAnswer(msgspec.Struct, frozen=True, kw_only=True):
    """The Command created in the job's namespace, as `vcctl job suspend` creates one."""

    namespace: str
    #: its name (`<job>-<action>-<random>`)
    name: str
    #: the Volcano action it asks for
    action: str
    job: str


class StoredEventAnswer(msgspec.Struct, frozen=True, kw_only=True):
    seq: int
    kind: str
    type: str
    #: the event exactly as it was on its topic (times there are epoch seconds, as logged)
    event: dict[str, Any]


class EventsAnswer(msgspec.Struct, frozen=True, kw_only=True):
    events: tuple[StoredEventAnswer, ...]


class ReasonCount(msgspec.Struct, frozen=True, kw_only=True):
    reason: str
    count: int


class Stats(msgspec.Struct, frozen=True, kw_only=True):
    by_phase: dict[str, int]
    by_namespace: dict[str, int]
    #: queue -> phase -> jobs
    by_queue: dict[str, dict[str, int]]
    job_failure_reasons: tuple[ReasonCount, ...]
    pod_failure_reasons: tuple[ReasonCount, ...]


class WhatIfRequest(msgspec.Struct, frozen=True):
    #: spec changes, one `spec.FIELD=VALUE` each (as `lavalog whatif --set`)
    set: list[str]


class Health(msgspec.Struct, frozen=True, omit_defaults=True):
    status: str
    error: str | None = None


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


def add_routes(app: web.Application, api: Api, *, version: str = "unknown") -> None:
    app[API] = api
    app[REGISTRY] = registry_for(api.queries, api.status.lag)
    app[OPENAPI] = msgspec.json.encode(
        document(ROUTES, title="lavalog projections API", version=version)
    )
    for route in ROUTES:
        app.router.add_route(route.method, route.path, _checked(route))

    async def close_streams(app: web.Application) -> None:
        api.hub.close()

    app.on_shutdown.append(close_streams)


def _checked(route: Route) -> Handler:
    """The route's handler, behind a check that every query parameter is one it takes: a
    misspelt filter is a 400 that says so, not a silently unfiltered answer."""
    known = {param.name for param in route.params}

    async def handler(request: web.Request) -> web.StreamResponse:
        unknown = sorted(set(request.query) - known)
        if unknown:
            takes = f"; it takes {', '.join(sorted(known))}" if known else "; it takes none"
            raise BadRequest(f"unknown query parameter {', '.join(unknown)}{takes}")
        return await route.handler(request)

    return handler


def _json(value: Any, kind: Any, *, status: int = 200) -> web.Response:
    """`value` (of type `kind`) as the API's JSON: times as RFC 3339 text
    (projections/core/wire.py)."""
    return web.Response(
        body=msgspec.json.encode(to_wire(value, kind)),
        status=status,
        content_type="application/json",
    )


def _error(message: str, status: int) -> web.Response:
    return _json(Error(message), Error, status=status)


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


async def _require(request: web.Request, namespace: str) -> None:
    """Go on only if the caller may read the jobs of `namespace` (else a 403)."""
    viewer = viewer_of(request)
    if not await viewer.may_read(namespace):
        raise Forbidden(forbidden_namespace(viewer, namespace))


async def _visible(request: web.Request, where: JobFilter) -> JobFilter:
    """`where`, kept to the namespaces the caller may read (a 403 for a namespace asked
    for by name that they may not)."""
    if where.namespace:
        await _require(request, where.namespace)
        return where
    queries = request.app[API].queries
    viewer = viewer_of(request)
    if await viewer.may_read(""):
        return where
    readable = await viewer.readable(await asyncio.to_thread(queries.namespaces))
    return msgspec.structs.replace(where, readable=readable)


def _namespace(request: web.Request) -> str:
    return request.match_info["namespace"]


async def _jobs(request: web.Request) -> web.Response:
    queries = request.app[API].queries
    where = await _visible(request, job_filter(request.query))
    limit = _int(request.query, "limit", 50, 1, MAX_PAGE)
    after = request.query.get("after")
    try:
        page = await asyncio.to_thread(queries.jobs, where, limit=limit, after=after)
    except ValueError:
        raise BadRequest(f"after: not a cursor from this API: {after!r}") from None
    return _json(page, Page)


async def _timeline(request: web.Request) -> tuple[Timeline, list[JobSummary]]:
    """The timeline asked for (`?incarnation=N`, else the latest) and every incarnation of
    its name; a 403 for a namespace the caller may not read, a 404 for no such job."""
    queries = request.app[API].queries
    await _require(request, _namespace(request))
    key = job_key(request.match_info["namespace"], request.match_info["name"])
    incarnation = request.query.get("incarnation")
    number = _int(request.query, "incarnation", 0, 1, 1 << 30) if incarnation else None
    timeline = await asyncio.to_thread(queries.timeline, key, incarnation=number)
    incarnations = await asyncio.to_thread(queries.incarnations, key)
    if timeline is None:
        raise NotFound(not_found(key, number, len(incarnations)))
    return timeline, incarnations


async def _job(request: web.Request) -> web.Response:
    queries = request.app[API].queries
    timeline, incarnations = await _timeline(request)
    as_of = await asyncio.to_thread(queries.log_time)
    decisions = await asyncio.to_thread(
        queries.bodies, timeline.uid, kind="decision", types=REPORTED_TYPES
    )
    answer = JobAnswer(
        timeline=timeline,
        incarnations=tuple(incarnations),
        as_of=as_of,
        kube_events=kube_events(decode_decision(body) for body in decisions),
        may_command=await _may_command(viewer_of(request), timeline.namespace),
    )
    return _json(answer, JobAnswer)


async def _may_command(viewer: Viewer, namespace: str) -> bool:
    """Whether the job page offers its buttons: without an answer from the API server, it
    does not (the page itself was authorized already)."""
    try:
        return await viewer.may_command(namespace)
    except ReviewUnavailable:
        return False


async def _job_spec(request: web.Request) -> web.Response:
    queries = request.app[API].queries
    timeline, _ = await _timeline(request)
    bodies = await asyncio.to_thread(
        queries.bodies, timeline.uid, kind="observation", types=("JobObserved",)
    )
    observed = [decode_observation(body) for body in bodies]
    specs = spec_versions(o for o in observed if isinstance(o, JobObserved))
    answer = SpecAnswer(uid=timeline.uid, incarnation=timeline.incarnation, specs=specs)
    return _json(answer, SpecAnswer)


async def _job_command(request: web.Request) -> web.Response:
    """Suspend, resume or restart the job: a Volcano Command created with the caller's own
    token, after RBAC said they may create Commands in the job's namespace (403 otherwise,
    whatever the page showed them)."""
    namespace, name = _namespace(request), request.match_info["name"]
    await _require(request, namespace)
    viewer = viewer_of(request)
    if viewer is EVERYONE:
        raise Forbidden(
            "suspend, resume and restart create a Volcano Command with the caller's own"
            " Kubernetes token: this server runs without --kubernetes-auth"
        )
    if not await viewer.may_command(namespace):
        raise Forbidden(forbidden(viewer, COMMANDS, namespace))
    try:
        verb = msgspec.json.decode(await request.read(), type=CommandRequest).action
    except msgspec.DecodeError as exc:
        shape = '{"action": "suspend|resume|restart"}'
        raise BadRequest(f"the body must be {shape}: {exc}") from None
    if verb not in COMMAND_VERBS:
        raise BadRequest(f"action: one of {', '.join(COMMAND_VERBS)}, not {verb!r}")
    action = ACTIONS[verb]
    try:
        async with viewer.as_caller() as kube:
            created = await issue_command(kube, namespace, name, action)
    except KubeError as exc:
        if exc.status in (401, 403, 404, 409, 422):  # the API server's answer to the caller
            return _error(f"the Kubernetes API answered {exc}", exc.status)
        raise Unavailable(f"the Kubernetes API answered {exc}") from None
    except Exception as exc:
        if not is_transient(exc):
            raise
        raise Unavailable(f"the Kubernetes API did not answer ({exc!r})") from None
    answer = CommandAnswer(namespace=namespace, name=created, action=action, job=name)
    return _json(answer, CommandAnswer, status=201)


async def _job_events(request: web.Request) -> web.Response:
    queries = request.app[API].queries
    await _require(request, _namespace(request))
    key = job_key(request.match_info["namespace"], request.match_info["name"])
    after = _int(request.query, "after", 0, 0, 1 << 62)
    uid = request.query.get("uid") or None
    events = await asyncio.to_thread(queries.events, key, after=after, uid=uid)
    body = {  # the raw events pass through byte for byte: no to_wire
        "events": [
            {"seq": e.seq, "kind": e.kind, "type": e.type, "event": msgspec.Raw(e.body)}
            for e in events
        ]
    }
    return web.Response(body=msgspec.json.encode(body), content_type="application/json")


async def _job_whatif(request: web.Request) -> web.Response:
    """The what-if of one job: body `{"set": ["spec.maxRetry=5", ...]}` (see whatif_from_sets)."""
    queries = request.app[API].queries
    await _require(request, _namespace(request))
    key = job_key(request.match_info["namespace"], request.match_info["name"])
    try:
        body = await request.json()
        sets = body.get("set") if isinstance(body, dict) else None
        if not isinstance(sets, list) or not all(isinstance(s, str) for s in sets):
            raise ValueError('the body must be {"set": ["spec.FIELD=VALUE", ...]}')
        stored = await asyncio.to_thread(queries.events, key)
        if not stored:
            return _error(f"no events of {key}", 404)
        report = await asyncio.to_thread(whatif_from_sets, [e.body for e in stored], sets)
    except ValueError as exc:  # JSON bodies and --set texts alike
        raise BadRequest(str(exc)) from None
    return _json(report, WhatIf)


async def _stats(request: web.Request) -> web.Response:
    queries = request.app[API].queries
    where = await _visible(request, job_filter(request.query))
    return _json(await asyncio.to_thread(queries.counts, where), Stats)


async def _stream(request: web.Request) -> web.StreamResponse:
    """Server-Sent Events: `id` is the store's sequence number, `event` the event type."""
    api = request.app[API]
    wanted = StreamFilter(
        key=request.query.get("job", ""),
        namespace=request.query.get("namespace", ""),
        types=frozenset(_list(request.query, "type")),
    )
    asked = wanted.namespace or (_job_namespace(wanted.key) if wanted.key else "")
    if asked:
        await _require(request, asked)
    viewer = viewer_of(request)
    response = web.StreamResponse(
        headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
    )
    try:
        async with api.hub.subscribe(wanted) as queue:
            await response.prepare(request)
            await _send_stream(response, queue, viewer, checked=bool(asked))
    except TooManyStreams as exc:
        raise Unavailable(str(exc)) from None
    except (ConnectionResetError, ReviewUnavailable):
        # the client left (a closed tab, a page that moved on), or its rights could not be
        # checked again: the stream ends, and a client that is still there reconnects
        pass
    return response


async def _send_stream(
    response: web.StreamResponse,
    queue: asyncio.Queue[Applied | None],
    viewer: Viewer,
    *,
    checked: bool,
) -> None:
    """Write the events of `queue` as SSE until it ends (None); each of a namespace the
    viewer may read (`checked`: the one namespace asked for was, at the start)."""
    await response.write(b": stream open\n\n")  # subscribed: nothing stored is missed
    while True:
        try:  # timeout(), not wait_for: on Python 3.11 that can lose a stop
            async with asyncio.timeout(HEARTBEAT_SECONDS):
                item = await queue.get()
        except TimeoutError:
            await response.write(b": heartbeat\n\n")
            continue
        if item is None:
            return
        if not checked and not await viewer.may_read(split_job_key(item.event.key)[0]):
            continue
        name = type(item.event).__name__
        data = item.raw if b"\n" not in item.raw else encode(item.event)
        await response.write(b"id: %d\nevent: %s\ndata: %s\n\n" % (item.seq, name.encode(), data))


def _job_namespace(key: str) -> str:
    try:
        return split_job_key(key)[0]
    except ValueError:
        raise BadRequest(f"job: expected NAMESPACE/NAME, not {key!r}") from None


async def _metrics(request: web.Request) -> web.Response:
    body = await asyncio.to_thread(generate_latest, request.app[REGISTRY])
    return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})


async def _healthz(request: web.Request) -> web.Response:
    error = request.app[API].status.error
    if error is not None:
        return _json(Health("failed", error), Health, status=503)
    return _json(Health("ok"), Health)


async def _readyz(request: web.Request) -> web.Response:
    status = request.app[API].status
    if not status.ready:
        return _json(Health("catching up"), Health, status=503)
    return _json(Health("ready"), Health)


async def _openapi(request: web.Request) -> web.Response:
    return web.Response(body=request.app[OPENAPI], content_type="application/json")


_TIME = {"type": "string", "description": "RFC 3339, or seconds since the epoch"}
_FILTERS = (
    Param("namespace", "only this namespace"),
    Param("queue", "only this queue"),
    Param("phase", f"only these phases, comma-separated: {', '.join(PHASES)}"),
    Param("since", "only jobs not ended before this time", _TIME),
    Param("until", "only jobs submitted by this time", _TIME),
    Param("q", "a substring of NAMESPACE/NAME"),
)
_INTEGER = {"type": "integer", "minimum": 0}
_INCARNATION = Param(
    "incarnation", "which job of that name, 1 = the first (default: the latest)", _INTEGER
)

#: every route of the API: registered from here and described from here
#: (projections/service/http/openapi.py)
ROUTES: tuple[Route, ...] = (
    Route(
        "GET",
        "/api/v1/jobs",
        _jobs,
        "jobs, newest first, a page at a time",
        Page,
        params=(
            *_FILTERS,
            Param(
                "limit",
                f"jobs per page, 1 to {MAX_PAGE}",
                {"type": "integer", "minimum": 1, "maximum": MAX_PAGE},
            ),
            Param("after", "the `next` cursor of the previous page"),
        ),
    ),
    Route(
        "GET",
        "/api/v1/jobs/{namespace}/{name}",
        _job,
        "one job's timeline: phases, decisions and every pod attempt",
        JobAnswer,
        params=(_INCARNATION,),
        errors={400: Error, 404: Error},
    ),
    Route(
        "GET",
        "/api/v1/jobs/{namespace}/{name}/spec",
        _job_spec,
        "the specs one job incarnation ran with, one per generation, as YAML",
        SpecAnswer,
        params=(_INCARNATION,),
        errors={400: Error, 404: Error},
    ),
    Route(
        "POST",
        "/api/v1/jobs/{namespace}/{name}/commands",
        _job_command,
        "suspend, resume or restart the job: a Volcano Command, created as `vcctl job` creates"
        " one, with the caller's own Kubernetes token",
        CommandAnswer,
        body=CommandRequest,
        status=201,
        errors={400: Error, 404: Error, 409: Error, 422: Error},
    ),
    Route(
        "GET",
        "/api/v1/jobs/{namespace}/{name}/events",
        _job_events,
        "one job's events as stored, in log order (its audit trail)",
        EventsAnswer,
        params=(
            Param("after", "only events after this sequence number", _INTEGER),
            Param("uid", "only the incarnation with this job uid"),
        ),
    ),
    Route(
        "POST",
        "/api/v1/jobs/{namespace}/{name}/whatif",
        _job_whatif,
        "replay the job's recorded facts under changed spec fields (computes, changes nothing)",
        WhatIf,
        body=WhatIfRequest,
        errors={400: Error, 404: Error},
    ),
    Route(
        "GET",
        "/api/v1/stats",
        _stats,
        "job counts by phase and queue, top failure reasons",
        Stats,
        params=_FILTERS,
    ),
    Route(
        "GET",
        "/api/v1/stream",
        _stream,
        "new events as Server-Sent Events (`id` the sequence number, `event` the type)",
        None,
        media_type="text/event-stream",
        params=(
            Param("job", "only this job, NAMESPACE/NAME"),
            Param("namespace", "only this namespace"),
            Param("type", "only these event types, comma-separated"),
        ),
    ),
    Route("GET", "/api/v1/openapi.json", _openapi, "this document", dict[str, Any], errors={}),
    Route(
        "GET",
        "/metrics",
        _metrics,
        "Prometheus metrics",
        None,
        media_type="text/plain",
        access=Access.METRICS,
        errors={},
    ),
    Route(
        "GET",
        "/healthz",
        _healthz,
        "the feed has not failed",
        Health,
        access=Access.PROBE,
        errors={503: Health},
    ),
    Route(
        "GET",
        "/readyz",
        _readyz,
        "the store has caught up once",
        Health,
        access=Access.PROBE,
        errors={503: Health},
    ),
)
