"""OpenAPI v3 documents (`/openapi/v3`, `/openapi/v3/apis/GROUP/VERSION`), as the API
server publishes them.

kubectl reads them for `kubectl explain vcjob.spec` (the schema of every served kind,
tagged with `x-kubernetes-group-version-kind`) and for `--validate=true`: a PATCH
operation that lists the `fieldValidation` query parameter tells kubectl the server
validates fields itself, so kubectl sends `fieldValidation=Strict`. The schemas are
the ones writes are held to (`fields.schema_of`), so what `explain` shows is what the
server keeps. Documents are built once and served as bytes.
"""

from __future__ import annotations

import copy
import hashlib
from functools import cache
from typing import Any

from aiohttp import web

from lavalog.simulator import discovery, fields, registry
from lavalog.simulator.registry import ResourceType
from lavalog.simulator.store import encode

Doc = dict[str, Any]
JSON = "application/json"


def _gv_path(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"


def _schema_name(resource: ResourceType) -> str:
    """Reverse-domain names as the API server uses (io.k8s.api.core.v1.Pod,
    sh.volcano.batch.v1alpha1.Job)."""
    if not resource.group:
        return f"io.k8s.api.core.{resource.version}.{resource.kind}"
    if resource.custom:
        domain = ".".join(reversed(resource.group.split(".")))
        return f"{domain}.{resource.version}.{resource.kind}"
    return f"io.k8s.api.{resource.group.split('.')[0]}.{resource.version}.{resource.kind}"


def _gvk(resource: ResourceType) -> list[Doc]:
    return [{"group": resource.group, "version": resource.version, "kind": resource.kind}]


def _operation(resource: ResourceType, action: str, writes: bool) -> Doc:
    operation: Doc = {
        "operationId": f"{action}{resource.kind}",
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": _gvk(resource)[0],
        "responses": {"200": {"description": "OK"}},
    }
    if writes:
        operation["parameters"] = [
            {
                "name": "fieldValidation",
                "in": "query",
                "description": "Ignore, Warn (the default) or Strict: what an unknown "
                "field in the body costs",
                "schema": {"type": "string", "uniqueItems": True},
            }
        ]
    return operation


def _paths(resource: ResourceType) -> Doc:
    base = "/" + _gv_path(resource.group, resource.version)
    collection = (
        f"{base}/namespaces/{{namespace}}/{resource.plural}"
        if resource.namespaced
        else f"{base}/{resource.plural}"
    )
    return {
        collection: {
            "get": _operation(resource, "list", False),
            "post": _operation(resource, "post", True),
        },
        f"{collection}/{{name}}": {
            "get": _operation(resource, "get", False),
            "put": _operation(resource, "put", True),
            "patch": _operation(resource, "patch", True),
            "delete": _operation(resource, "delete", False),
        },
    }


def group_version_doc(group: str, version: str) -> Doc | None:
    served = list(registry.in_group_version(group, version))
    if not served:
        return None
    paths: Doc = {}
    schemas: Doc = {}
    for resource in served:
        paths.update(_paths(resource))
        found = copy.deepcopy(fields.schema_of(resource))
        found["x-kubernetes-group-version-kind"] = _gvk(resource)
        schemas[_schema_name(resource)] = found
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": discovery.VERSION["gitVersion"]},
        "paths": paths,
        "components": {"schemas": schemas},
    }


@cache
def _encoded(group: str, version: str) -> bytes | None:
    doc = group_version_doc(group, version)
    return None if doc is None else encode(doc)


@cache
def _root() -> bytes:
    paths: Doc = {}
    for group, versions in registry.group_versions().items():
        for version in versions:
            body = _encoded(group, version)
            assert body is not None
            digest = hashlib.sha256(body).hexdigest()[:16].upper()
            path = _gv_path(group, version)
            paths[path] = {"serverRelativeURL": f"/openapi/v3/{path}?hash={digest}"}
    return encode({"paths": paths})


async def _serve_root(request: web.Request) -> web.Response:
    return web.Response(body=_root(), content_type=JSON)


async def _serve_group_version(request: web.Request) -> web.Response:
    parts = [p for p in request.match_info["tail"].split("/") if p]
    body = None
    if parts[:1] == ["api"] and len(parts) == 2:
        body = _encoded("", parts[1])
    elif parts[:1] == ["apis"] and len(parts) == 3:
        body = _encoded(parts[1], parts[2])
    if body is None:
        raise web.HTTPNotFound()
    return web.Response(body=body, content_type=JSON)


def routes() -> list[web.RouteDef]:
    return [
        web.get("/openapi/v3", _serve_root),
        web.get("/openapi/v3/{tail:.*}", _serve_group_version),
    ]
