"""The Kubernetes HTTP API: URL parsing, verbs, query parameters and wire encoding.

One generic handler serves every kind in the registry; what differs per kind lives in
the registry row, `defaults.py` and `objects.py`. Lists and watches are assembled from
the stored JSON encodings, so a list of 200,000 pods is one join, not 200,000 encodes.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import msgspec
from aiohttp import web

from lavalog.simulator import discovery, disruption, fields, pods, rbac, registry, watch
from lavalog.simulator.access import Access, AccessListener
from lavalog.simulator.errors import ApiError, bad_request, not_found
from lavalog.simulator.objects import Objects
from lavalog.simulator.registry import ResourceType
from lavalog.simulator.selectors import parse as parse_selector
from lavalog.simulator.store import Entry, Obj, decode, encode
from lavalog.simulator.writes import Write, WriteLog

JSON = "application/json"
#: answers `POST .../serviceaccounts/NAME/token` (lavalog.simulator.reviews)
TokenRequests = Callable[[web.Request, str, str], Awaitable[web.Response]]
#: who makes a request, if it carries a token, once allowed (`Reviews.caller`: 401, 403)
Callers = Callable[[web.Request, rbac.Request], rbac.User | None]


@dataclass(frozen=True, slots=True)
class Target:
    """What a resource URL names."""

    resource: ResourceType
    namespace: str | None
    name: str | None
    subresource: str | None


def _resolve(group: str, version: str, parts: list[str]) -> Target:
    """Parse the path after /api/v1 or /apis/GROUP/VERSION."""
    if len(parts) >= 3 and parts[0] == "namespaces":
        resource = registry.lookup(group, version, parts[2])
        if resource is not None and resource.namespaced and len(parts) <= 5:
            return Target(resource, parts[1], _at(parts, 3), _at(parts, 4))
    resource = registry.lookup(group, version, parts[0]) if parts else None
    if resource is None or len(parts) > 3:
        raise ApiError(404, "NotFound", "the server could not find the requested resource")
    if resource.namespaced and len(parts) > 1:
        raise ApiError(404, "NotFound", "the server could not find the requested resource")
    return Target(resource, None, _at(parts, 1), _at(parts, 2))


def _verb_and_resource(request: web.Request, target: Target) -> tuple[str, str]:
    """Kubernetes' names for the request, as RBAC checks it: ("update", "jobs/status")."""
    verb = _VERBS.get(request.method, request.method.lower())
    if request.method == "GET" and target.name is None:
        verb = "watch" if _truthy(request.query.get("watch")) else "list"
    elif request.method == "DELETE" and target.name is None:
        verb = "deletecollection"
    resource = target.resource.plural
    return verb, f"{resource}/{target.subresource}" if target.subresource else resource


def _rbac_request(verb: str, target: Target) -> rbac.Request:
    """The request as RBAC is asked about it (`authorizer.Attributes`)."""
    return rbac.Request(
        verb=verb,
        namespace=target.namespace or "",
        group=target.resource.group,
        resource=target.resource.plural,
        subresource=target.subresource or "",
        name=target.name or "",
    )


_VERBS = {"GET": "get", "POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}


def _at(parts: list[str], i: int) -> str | None:
    return parts[i] if len(parts) > i else None


def json_response(body: Any, status: int = 200) -> web.Response:
    return web.Response(body=encode(body), status=status, content_type=JSON)


def _success(code: int) -> web.Response:
    """The `Status` the API server answers an action subresource (eviction, binding) with."""
    body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": code}
    return json_response(body, code)


def _entry_response(
    entry: Entry, status: int = 200, warnings: list[str] | None = None
) -> web.Response:
    """A stored object, sent as the encoding the store already holds, with the API
    server's `Warning` headers (one per unknown field dropped under fieldValidation=Warn)."""
    response = web.Response(body=entry.raw, status=status, content_type=JSON)
    for text in warnings or ():
        response.headers.add("Warning", "299 - " + json.dumps(text))
    return response


def _int(query: Any, name: str) -> int | None:
    value = query.get(name)
    if value in (None, ""):
        return None
    try:
        return int(value)
    except ValueError as exc:
        raise bad_request(f"{name} must be an integer") from exc


def _dry_run(value: str | None) -> bool:
    """The `dryRun` parameter: absent, or "All" (the only value Kubernetes accepts)."""
    if value is None:
        return False
    if value != "All":
        raise bad_request(f'unsupported dryRun value "{value}": the only supported value is "All"')
    return True


def _truthy(value: str | None) -> bool:
    return value in ("true", "1", "True")


@web.middleware
async def errors_middleware(
    request: web.Request, handler: Callable[[web.Request], Any]
) -> web.StreamResponse:
    """Answer every failure as a Kubernetes `Status` object."""
    try:
        response: web.StreamResponse = await handler(request)
        return response
    except ApiError as exc:
        response = json_response(exc.status(), exc.code)
    except web.HTTPNotFound:
        response = json_response(
            ApiError(404, "NotFound", "the server could not find the requested resource").status(),
            404,
        )
    if response.status == 429:
        response.headers["Retry-After"] = "1"
    return response


class KubeApi:
    """aiohttp handlers for discovery and every registered resource."""

    def __init__(
        self,
        objects: Objects,
        *,
        logs: Callable[[Obj, str], str],
        bookmark_interval: float = 1.0,
        calls: Counter[str],
        refused: Counter[str] | None = None,
        writes: WriteLog | None = None,
        access: list[AccessListener] | None = None,
        token_requests: TokenRequests | None = None,
        callers: Callers | None = None,
    ) -> None:
        self.objects = objects
        self.writes = writes or WriteLog()
        #: called with every request to a resource (`lavalog.simulator.access`)
        self.access = access if access is not None else []
        #: requests served, by "verb resource[/subresource]" (`GET /sim/state`, benchmarks)
        self.calls = calls
        #: requests answered with an error, by "verb resource[/subresource] code": a 409
        #: Conflict is a write its client must read and make again
        self.refused = refused if refused is not None else Counter()
        self.logs = logs
        self.bookmark_interval = bookmark_interval
        self.token_requests = token_requests
        self.callers = callers

    def routes(self) -> list[web.RouteDef]:
        return [
            web.get("/version", self.version),
            web.get("/version/", self.version),
            web.get("/healthz", self.healthz),
            web.get("/readyz", self.healthz),
            web.get("/livez", self.healthz),
            web.route("*", "/api", self.core),
            web.route("*", "/api/{tail:.*}", self.core),
            web.route("*", "/apis", self.groups),
            web.route("*", "/apis/{tail:.*}", self.groups),
        ]

    async def version(self, request: web.Request) -> web.Response:
        return json_response(discovery.VERSION)

    async def healthz(self, request: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def core(self, request: web.Request) -> web.StreamResponse:
        parts = [p for p in request.match_info.get("tail", "").split("/") if p]
        if not parts:
            return json_response(discovery.core_versions(request.host))
        if parts[0] != "v1":
            raise not_found("versions", parts[0])
        if len(parts) == 1:
            return json_response(discovery.resources("", "v1"))
        return await self._serve(request, _resolve("", "v1", parts[1:]))

    async def groups(self, request: web.Request) -> web.StreamResponse:
        parts = [p for p in request.match_info.get("tail", "").split("/") if p]
        if not parts:
            return json_response(discovery.groups())
        if len(parts) == 1:
            doc = discovery.group(parts[0])
        elif len(parts) == 2:
            doc = discovery.resources(parts[0], parts[1])
        else:
            return await self._serve(request, _resolve(parts[0], parts[1], parts[2:]))
        if doc is None:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        return json_response(doc)

    # verbs -----------------------------------------------------------------------

    async def _serve(self, request: web.Request, target: Target) -> web.StreamResponse:
        method = request.method
        if "dryRun" in request.query and method != "POST":
            # a write that must not happen is refused, never carried out
            raise bad_request("the simulated API server supports dryRun on create only")
        verb, resource = _verb_and_resource(request, target)
        self.calls[f"{verb} {resource}"] += 1
        try:
            return await self._answer(request, target, verb, resource)
        except ApiError as error:
            self.refused[f"{verb} {resource} {error.code}"] += 1
            raise

    async def _answer(
        self, request: web.Request, target: Target, verb: str, resource: str
    ) -> web.StreamResponse:
        method = request.method
        user = self.callers(request, _rbac_request(verb, target)) if self.callers else None
        if self.access:
            asked = Access(
                request.headers.get("User-Agent", ""),
                verb,
                target.resource.group,
                resource,
                user="" if user is None else user.name,
            )
            for listener in self.access:
                listener(asked)
        if target.name is None:
            if method == "GET":
                if _truthy(request.query.get("watch")):
                    return await self._watch(request, target)
                return self._list(request, target)
            if method == "POST":
                return await self._create(request, target)
            if method == "DELETE":
                return await self._delete_collection(request, target)
        elif target.subresource == "status" and not target.resource.has_status:
            # e.g. PodGroup: Volcano's CRD declares no status subresource
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        elif target.subresource in (None, "status"):
            name, namespace = target.name, target.namespace or ""
            if method == "GET":
                return _entry_response(self.objects.read(target.resource, namespace, name))
            if method in ("PUT", "PATCH"):
                return await self._write(request, target, namespace, name)
            if method == "DELETE" and target.subresource is None:
                options = await _body(request, optional=True)
                return _entry_response(
                    self._delete(request, target.resource, namespace, name, options)
                )
        elif target.resource is registry.POD:
            return await self._pod_subresource(request, target)
        elif (
            target.resource is registry.SERVICE_ACCOUNT
            and target.subresource == "token"
            and method == "POST"
            and self.token_requests is not None
        ):
            return await self.token_requests(request, target.namespace or "", target.name)
        raise ApiError(
            405,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
        )

    async def _create(self, request: web.Request, target: Target) -> web.Response:
        """POST; with `dryRun=All`, checked and answered as created but not stored."""
        dry_run = _dry_run(request.query.get("dryRun"))
        body = await _body(request)
        sent = self.writes.sent_copy(body)
        warnings: list[str] = []
        created = self.objects.create(
            target.resource,
            target.namespace or "",
            body,
            validation=fields.directive(request.query.get("fieldValidation")),
            warnings=warnings,
            dry_run=dry_run,
        )
        if not dry_run:
            self._written(request, target, sent, created, warnings)
        return _entry_response(created, 201, warnings)

    async def _write(
        self, request: web.Request, target: Target, namespace: str, name: str
    ) -> web.Response:
        """PUT or PATCH of an object or its status."""
        body = await _body(request)
        sent = self.writes.sent_copy(body)
        validation = fields.directive(request.query.get("fieldValidation"))
        warnings: list[str] = []
        if request.method == "PUT":
            entry = self.objects.update(
                target.resource,
                namespace,
                name,
                body,
                subresource=target.subresource,
                validation=validation,
                warnings=warnings,
            )
        else:
            entry = self.objects.patch(
                target.resource,
                namespace,
                name,
                request.headers.get("Content-Type", "").split(";")[0].strip(),
                body,
                subresource=target.subresource,
                validation=validation,
                warnings=warnings,
            )
        self._written(request, target, sent, entry, warnings)
        return _entry_response(entry, 200, warnings)

    def _written(
        self, request: web.Request, target: Target, sent: Any, entry: Entry, warnings: list[str]
    ) -> None:
        if self.writes.listeners:
            self.writes.record(
                Write(
                    method=request.method,
                    resource=target.resource,
                    subresource=target.subresource,
                    sent=sent,
                    stored=entry.obj,
                    warnings=tuple(warnings),
                    user_agent=request.headers.get("User-Agent", ""),
                )
            )

    def _list(self, request: web.Request, target: Target) -> web.Response:
        q = request.query
        selector = parse_selector(
            q.get("labelSelector"), q.get("fieldSelector"), target.resource.field_labels
        )
        page = self.objects.list(
            target.resource,
            target.namespace,
            selector,
            limit=_int(q, "limit") or 0,
            continue_token=q.get("continue"),
        )
        meta: dict[str, str] = {"resourceVersion": str(page.rv)}
        if page.continue_token:
            meta["continue"] = page.continue_token
        head = encode(
            {
                "kind": target.resource.kind + "List",
                "apiVersion": target.resource.api_version,
                "metadata": meta,
            }
        )
        body = head[:-1] + b',"items":[' + b",".join(e.raw for e in page.items) + b"]}"
        return web.Response(body=body, content_type=JSON)

    async def _watch(self, request: web.Request, target: Target) -> web.StreamResponse:
        q = request.query
        selector = parse_selector(
            q.get("labelSelector"), q.get("fieldSelector"), target.resource.field_labels
        )
        rv = q.get("resourceVersion") or "0"
        try:
            since = int(rv)
        except ValueError as exc:
            raise bad_request(f"invalid resourceVersion {rv!r}") from exc
        timeout = _int(q, "timeoutSeconds")
        req = watch.WatchRequest(
            resource=target.resource,
            namespace=target.namespace,
            selector=selector,
            since=since or None,
            bookmarks=_truthy(q.get("allowWatchBookmarks")),
            timeout=float(timeout) if timeout else None,
            send_initial_events=_truthy(q.get("sendInitialEvents")),
        )
        response = web.StreamResponse(headers={"Content-Type": JSON})
        response.enable_chunked_encoding()
        await response.prepare(request)
        try:
            await watch.serve(
                self.objects.store, req, response.write, bookmark_interval=self.bookmark_interval
            )
            await response.write_eof()
        except (ConnectionResetError, ConnectionError):
            pass
        return response

    def _delete(
        self, request: web.Request, resource: ResourceType, namespace: str, name: str, options: Any
    ) -> Entry:
        options = options if isinstance(options, dict) else {}
        grace = _int(request.query, "gracePeriodSeconds")
        if grace is None:
            grace = options.get("gracePeriodSeconds")
        propagation = request.query.get("propagationPolicy") or options.get("propagationPolicy")
        if propagation is None and options.get("orphanDependents") is True:
            propagation = "Orphan"
        return self.objects.delete(
            resource,
            namespace,
            name,
            grace_period=grace,
            propagation=propagation,
            preconditions=options.get("preconditions"),
        )

    async def _delete_collection(self, request: web.Request, target: Target) -> web.Response:
        q = request.query
        options = await _body(request, optional=True)
        selector = parse_selector(
            q.get("labelSelector"), q.get("fieldSelector"), target.resource.field_labels
        )
        page = self.objects.list(target.resource, target.namespace, selector)
        deleted = []
        for entry in page.items:
            meta = entry.obj["metadata"]
            try:
                deleted.append(
                    self._delete(
                        request, target.resource, meta.get("namespace", ""), meta["name"], options
                    ).obj
                )
            except ApiError as exc:
                if exc.code != 404:
                    raise
        kind = target.resource.kind + "List"
        return json_response(
            {
                "kind": kind,
                "apiVersion": target.resource.api_version,
                "metadata": {"resourceVersion": str(self.objects.store.rv)},
                "items": deleted,
            }
        )

    async def _pod_subresource(self, request: web.Request, target: Target) -> web.StreamResponse:
        namespace, name = target.namespace or "", target.name or ""
        if target.subresource == "log" and request.method == "GET":
            pod = self.objects.get(registry.POD, namespace, name)
            container = _log_container(pod, request.query.get("container", ""))
            return web.Response(text=self.logs(pod, container), content_type="text/plain")
        if target.subresource == "eviction" and request.method == "POST":
            body = await _body(request)
            options = (body.get("deleteOptions") if isinstance(body, dict) else None) or {}
            if not _dry_run(request.query.get("dryRun")) and not options.get("dryRun"):
                disruption.evict_by_api(self.objects, namespace, name, options)
            return _success(201)
        if target.subresource == "binding" and request.method == "POST":
            body = await _body(request)
            node = (body.get("target") or {}).get("name") if isinstance(body, dict) else None
            if not node:
                raise bad_request("binding target.name is required")
            pods.bind(self.objects, namespace, name, node)
            return _success(201)
        raise ApiError(
            405,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
        )


async def _body(request: web.Request, *, optional: bool = False) -> Any:
    raw = await request.read()
    if not raw:
        if optional:
            return None
        raise bad_request("the request body is empty")
    try:
        return decode(raw)
    except msgspec.DecodeError as exc:
        raise bad_request(f"the request body is not valid JSON: {exc}") from exc


def _log_container(pod: Obj, container: str) -> str:
    """The container whose log `GET pods/NAME/log` reads (the registry's `LogLocation`):
    the one named, which must be the pod's, else its only container."""
    spec = pod.get("spec", {})
    name = pod["metadata"]["name"]
    names = [str(c["name"]) for c in spec.get("containers", [])]
    inits = [str(c["name"]) for c in spec.get("initContainers", [])]
    if container:
        if container not in names + inits:
            raise bad_request(f"container {container} is not valid for pod {name}")
        return container
    if len(names) == 1:
        return names[0]
    if not names:
        raise bad_request(f"a container name must be specified for pod {name}")
    problem = f"a container name must be specified for pod {name}, choose one of: "
    problem += f"[{' '.join(names)}]"
    if inits:
        problem += f" or one of the init containers: [{' '.join(inits)}]"
    raise bad_request(problem)
