"""Requests as RBAC sees them: who asked, with which verb, for which resource.

A real API server authorizes each request by (user, verb, API group, resource); a
ClusterRole lists those. Tests that keep deploy/'s ClusterRole equal to what lavalog
really asks for listen here (`SimulatedCluster.on_request`); the User-Agent stands in
for the user of a request without a token (every client on the kubeconfig has the same
rights), and `user` names the user of one with a token.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Access:
    """One request to a resource, in a ClusterRole's terms."""

    user_agent: str
    #: get, list, watch, create, update, patch, delete, deletecollection
    verb: str
    #: "" for the core group
    group: str
    #: the plural, with a subresource after a slash: `jobs/status`
    resource: str
    #: the user of the request's bearer token; "" for a request without one (the
    #: kubeconfig's, the cluster's administrator)
    user: str = ""


AccessListener = Callable[[Access], None]
