"""What an API call is, for counting it: its Kubernetes verb, its resource and its purpose.

The API budget (`--kube-api-qps`) is spent on a few kinds of call; an operator sizing it
needs to see which (`lavalog_actuator_api_calls_total{verb,resource,purpose}`), as the
API server's own `apiserver_request_total{verb,resource,subresource}` would show them. Pure.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Purpose(enum.StrEnum):
    """Why the call is made: what the API server is asked to do for the job."""

    CREATE = "create"
    DELETE = "delete"
    STATUS = "status"
    EVENT = "event"
    READ = "read"
    UPDATE = "update"


@dataclass(frozen=True, slots=True)
class Call:
    """`verb` as Kubernetes names it (get, list, watch, create, update, patch, delete);
    `resource` the plural, with `/subresource` when there is one (`jobs/status`)."""

    verb: str
    resource: str
    purpose: Purpose


def classify(method: str, path: str, *, watch: bool = False) -> Call:
    """The call of HTTP `method` on API `path` (`/api/v1/namespaces/NS/pods/NAME`, ...)."""
    resource, named = _resource(path)
    verb = _verb(method, named=named, watch=watch)
    return Call(verb, resource, purpose_of(verb, resource))


def _resource(path: str) -> tuple[str, bool]:
    """(plural[/subresource], whether one object is named)."""
    parts = [part for part in path.split("/") if part]
    # /api/v1/... or /apis/GROUP/VERSION/...
    rest = parts[2:] if parts[:1] == ["api"] else parts[3:]
    if rest[:1] == ["namespaces"] and len(rest) >= 3:
        rest = rest[2:]
    if not rest:
        return "", False
    plural, named = rest[0], len(rest) >= 2
    return (f"{plural}/{rest[2]}" if len(rest) >= 3 else plural), named


def _verb(method: str, *, named: bool, watch: bool) -> str:
    if method == "GET":
        return "watch" if watch else ("get" if named else "list")
    return {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}.get(
        method, method.lower()
    )


def purpose_of(verb: str, resource: str) -> Purpose:
    """The purpose of a call by its Kubernetes verb and resource (`update`, `jobs/status`)."""
    if resource == "events":
        return Purpose.EVENT
    if resource.endswith("/status"):
        return Purpose.STATUS
    if verb in ("get", "list", "watch"):
        return Purpose.READ
    if verb == "create":
        return Purpose.CREATE
    if verb == "delete":
        return Purpose.DELETE
    return Purpose.UPDATE
