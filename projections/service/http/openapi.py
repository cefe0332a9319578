"""The OpenAPI 3.1 document of the projections API, built from the table of its routes.

Each route is declared once (`Route`): the API registers its handler from the table and
this module describes it from the same table, with the answer's schema generated from
the Struct the handler encodes, so the document cannot leave a route out or describe a
field the answer does not have.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec
from aiohttp import web

from lavalog.controller.auth.middleware import Access
from lavalog.projections.core.wire import TIME_SCHEMA

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

REF_TEMPLATE = "#/components/schemas/{name}"


@dataclass(frozen=True)
class Param:
    """A query parameter (path parameters come from the route's `{name}`s)."""

    name: str
    description: str
    schema: dict[str, Any] = field(default_factory=lambda: {"type": "string"})


@dataclass(frozen=True)
class Route:
    method: str
    path: str
    handler: Handler
    summary: str
    #: the Struct (or type) of the 200 answer's JSON; None for a body that is not JSON
    answer: Any
    media_type: str = "application/json"
    params: tuple[Param, ...] = ()
    #: the Struct of a JSON request body, if any
    body: Any = None
    #: the status of its answer
    status: int = 200
    #: who may call it
    access: Access = Access.READ
    #: other statuses it answers, each with its body's type (`Error` for a 4xx)
    errors: dict[int, Any] = field(default_factory=lambda: {400: Error})


class Error(msgspec.Struct, frozen=True):
    """Every 4xx answer of the API: what was wrong, for a person."""

    error: str


def document(routes: Sequence[Route], *, title: str, version: str) -> dict[str, Any]:
    """The OpenAPI document describing `routes`."""
    types = [Error] + [r.answer for r in routes if r.answer is not None]
    types += [r.body for r in routes if r.body is not None]
    types += [kind for r in routes for kind in r.errors.values()]
    types = list(dict.fromkeys(types))
    schemas, components = msgspec.json.schema_components(types, ref_template=REF_TEMPLATE)
    by_type = dict(zip(types, schemas, strict=True))
    paths: dict[str, dict[str, Any]] = {}
    for route in routes:
        paths.setdefault(route.path, {})[route.method.lower()] = _operation(route, by_type)
    described: dict[str, Any] = {
        "openapi": "3.1.0",
        "info": {"title": title, "version": version},
        "paths": paths,
        "components": {
            "schemas": components,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
    }
    return {key: _times_as_strings(value) for key, value in described.items()}


def _operation(route: Route, by_type: dict[Any, Any]) -> dict[str, Any]:
    parameters = [
        {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
        for name in _path_names(route.path)
    ] + [
        {"name": p.name, "in": "query", "description": p.description, "schema": p.schema}
        for p in route.params
    ]
    content = (
        {route.media_type: {"schema": by_type[route.answer]}}
        if route.answer is not None
        else {route.media_type: {"schema": {"type": "string"}}}  # text: metrics, SSE
    )
    responses: dict[str, Any] = {
        str(route.status): {"description": route.summary, "content": content}
    }
    public = route.access is Access.PROBE
    errors = route.errors if public else route.errors | {401: Error, 403: Error, 503: Error}
    for status, kind in errors.items():
        responses[str(status)] = {
            "description": _REASONS[status],
            "content": {"application/json": {"schema": by_type[kind]}},
        }
    operation: dict[str, Any] = {
        "summary": route.summary,
        "operationId": route.handler.__name__.strip("_"),
        "parameters": parameters,
        "responses": responses,
        "security": [] if public else [{"bearer": []}],
    }
    if route.body is not None:
        operation["requestBody"] = {
            "required": True,
            "content": {"application/json": {"schema": by_type[route.body]}},
        }
    return operation


_REASONS = {
    400: "a bad parameter or body; `error` says which and why",
    401: "authentication is on and the request carried no valid token"
    " (Authorization: Bearer TOKEN)",
    403: "the token's user may not do this: RBAC lets them `get` no"
    " `jobs.batch.volcano.sh` in the namespace (`create` no `commands.bus.volcano.sh`, for a"
    " command; `get` not the path, for /metrics), or a browser's request came from another"
    " site",
    404: "no such job (or incarnation)",
    409: "the Kubernetes API refused the write as in conflict; `error` says why",
    422: "the Kubernetes API refused the object as invalid; `error` says why",
    503: "not ready or failed, or the Kubernetes API could not review the token; `error` says why",
}


def _path_names(path: str) -> list[str]:
    return [part[1:-1] for part in path.split("/") if part.startswith("{")]


def _times_as_strings(node: Any) -> Any:
    """msgspec keeps a `Time`'s float type; on the wire it is an RFC 3339 string."""
    if isinstance(node, dict):
        if node.get("format") == TIME_SCHEMA["format"]:
            node = node | {"type": "string"}
        return {key: _times_as_strings(value) for key, value in node.items()}
    if isinstance(node, list):
        return [_times_as_strings(item) for item in node]
    return node
