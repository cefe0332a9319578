"""Who a token is and what RBAC lets them do: TokenRequest, TokenReview, SubjectAccessReview,
and the requests made with a token.

A server that delegates authentication and authorization to Kubernetes (an aggregated
API server, kube-rbac-proxy, lavalog's projections) sends each bearer token it receives
to `POST /apis/authentication.k8s.io/v1/tokenreviews` and each access it must decide to
`POST /apis/authorization.k8s.io/v1/subjectaccessreviews`. The simulated API server
answers both as kube-apiserver does (pkg/registry/authentication/tokenreview/storage.go,
pkg/registry/authorization/subjectaccessreview/rest.go): a token is one it was given
(`Tokens.add`) or issued to a ServiceAccount (`kubectl create token`, the
`serviceaccounts/token` subresource), and an access is decided by the RBAC objects it
holds (`lavalog.simulator.rbac`), plus `system:masters`, which kube-apiserver's privileged
group authorizer allows everything.

A request to the API that carries a bearer token is that token's user's: a token nobody
was given is a 401, and a request RBAC does not allow that user a 403 worded as
kube-apiserver words it (`responsewriters.Forbidden`). A request without a token is the
kubeconfig's, which names no user: the cluster's administrator, allowed everything (as a
kubeconfig's client certificate in `system:masters` is on a real cluster).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from aiohttp import web

from lavalog.simulator import rbac, registry
from lavalog.simulator.errors import ApiError, bad_request, invalid
from lavalog.simulator.objects import Objects
from lavalog.simulator.store import decode, encode

Obj = dict[str, Any]

TOKEN_REVIEWS = "/apis/authentication.k8s.io/v1/tokenreviews"
ACCESS_REVIEWS = "/apis/authorization.k8s.io/v1/subjectaccessreviews"
#: kube-apiserver's `user.SystemPrivilegedGroup`: allowed everything, before RBAC
PRIVILEGED_GROUP = "system:masters"
#: a TokenRequest's lifetime when it asks for none (`kubectl create token`'s default too)
DEFAULT_EXPIRATION_SECONDS = 3600
#: the shortest lifetime the API server accepts (`validation.ValidateTokenRequest`)
MIN_EXPIRATION_SECONDS = 600


@dataclass(frozen=True, slots=True)
class Issued:
    user: rbac.User
    #: simulated seconds (the cluster's clock) after which the token is refused; None: never
    expires: float | None


class Tokens:
    """The bearer tokens the simulated API server authenticates, and whom each is."""

    def __init__(self, objects: Objects) -> None:
        self._objects = objects
        self._issued: dict[str, Issued] = {}

    def add(self, token: str, user: str, groups: tuple[str, ...] = ()) -> rbac.User:
        """Make `token` authenticate as `user` in `groups` (and system:authenticated)."""
        who = rbac.User(user, (*groups, rbac.AUTHENTICATED))
        self._issued[token] = Issued(who, None)
        return who

    def issue(self, namespace: str, name: str, expiration_seconds: int) -> tuple[str, float]:
        """A new token of ServiceAccount `namespace/name`, and when it expires."""
        account = self._objects.get(registry.SERVICE_ACCOUNT, namespace, name)
        user = rbac.service_account_user(namespace, name, account["metadata"].get("uid", ""))
        token = secrets.token_urlsafe(32)
        expires = self._objects.clock.seconds() + expiration_seconds
        self._issued[token] = Issued(user, expires)
        return token, expires

    def authenticate(self, token: str) -> rbac.User | None:
        """Whom `token` is, None if nobody (unknown, or expired on the cluster's clock)."""
        issued = self._issued.get(token)
        if issued is None:
            return None
        if issued.expires is not None and self._objects.clock.seconds() >= issued.expires:
            return None
        return issued.user


def allowed_by(objects: Objects, user: rbac.User, asked: rbac.Request) -> str | None:
    """Why `user` may do `asked`: the binding that allows it, "" for the privileged group
    (whose authorizer gives no reason); None when nothing allows it."""
    if PRIVILEGED_GROUP in user.groups:
        return ""
    return rbac.allowed_by(objects, user, asked)


def forbidden(user: rbac.User, asked: rbac.Request) -> ApiError:
    """The 403 kube-apiserver answers (`responsewriters.forbiddenMessage`, then
    `apierrors.NewForbidden` with the group-qualified resource and the name)."""
    resource = f"{asked.resource}/{asked.subresource}" if asked.subresource else asked.resource
    where = f'in the namespace "{asked.namespace}"' if asked.namespace else "at the cluster scope"
    why = (
        f'User "{user.name}" cannot {asked.verb} resource "{resource}" in API group'
        f' "{asked.group}" {where}'
    )
    qualified = f"{asked.resource}.{asked.group}" if asked.group else asked.resource
    named = f'{qualified} "{asked.name}"' if asked.name else qualified
    details: Obj = {"group": asked.group, "kind": asked.resource}
    if asked.name:
        details["name"] = asked.name
    return ApiError(403, "Forbidden", f"{named} is forbidden: {why}", details=details)


class Reviews:
    """The HTTP side: TokenReview, SubjectAccessReview and the TokenRequest subresource."""

    def __init__(self, objects: Objects, tokens: Tokens) -> None:
        self._objects = objects
        self.tokens = tokens

    def routes(self) -> list[web.RouteDef]:
        return [web.post(TOKEN_REVIEWS, self.token_review), web.post(ACCESS_REVIEWS, self.access)]

    async def token_review(self, request: web.Request) -> web.Response:
        review = await _object(request, "TokenReview")
        token = (review.get("spec") or {}).get("token") or ""
        if not token:
            raise bad_request("token is required for TokenReview in authentication")
        user = self.tokens.authenticate(token)
        status: Obj = {"user": {}}
        if user is not None:
            status = {"authenticated": True, "user": user.to_json()}
            audiences = review["spec"].get("audiences")
            if audiences:
                status["audiences"] = audiences
        return _created({**review, "status": status})

    async def access(self, request: web.Request) -> web.Response:
        review = await _object(request, "SubjectAccessReview")
        spec = review.get("spec") or {}
        asked = _access_request(spec)
        user = rbac.User(
            spec.get("user") or "", tuple(spec.get("groups") or ()), spec.get("uid") or ""
        )
        reason = allowed_by(self._objects, user, asked)
        status: Obj = {"allowed": reason is not None}
        if reason:
            status["reason"] = reason
        return _created({**review, "status": status})

    def caller(self, request: web.Request, asked: rbac.Request) -> rbac.User | None:
        """The user of a request to the API, None for one without a token (the kubeconfig's:
        allowed everything). ApiError 401 for a token nobody was given, 403 for an `asked`
        RBAC does not allow its user."""
        scheme, _, token = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            return None
        user = self.tokens.authenticate(token.strip())
        if user is None:
            raise ApiError(401, "Unauthorized", "Unauthorized")
        if allowed_by(self._objects, user, asked) is None:
            raise forbidden(user, asked)
        return user

    async def token_request(self, request: web.Request, namespace: str, name: str) -> web.Response:
        """`POST .../serviceaccounts/NAME/token` (`kubectl create token NAME`)."""
        body = await _object(request, "TokenRequest")
        spec = dict(body.get("spec") or {})
        seconds = int(spec.get("expirationSeconds") or DEFAULT_EXPIRATION_SECONDS)
        if seconds < MIN_EXPIRATION_SECONDS:
            raise invalid(
                "TokenRequest",
                name,
                f"spec.expirationSeconds: Invalid value: {seconds}: may not specify a duration"
                " less than 10 minutes",
            )
        spec["expirationSeconds"] = seconds
        spec.setdefault("audiences", [])
        token, expires = self.tokens.issue(namespace, name, seconds)
        clock = self._objects.clock
        expiry = clock.now() + timedelta(seconds=expires - clock.seconds())
        answer = {
            "kind": "TokenRequest",
            "apiVersion": "authentication.k8s.io/v1",
            "metadata": {"name": name, "namespace": namespace, "creationTimestamp": None},
            "spec": spec,
            "status": {
                "token": token,
                "expirationTimestamp": expiry.strftime("%Y-%m-%dT%H:%M:%SZ"),
            },
        }
        return _created(answer)


def _access_request(spec: Obj) -> rbac.Request:
    """What a SubjectAccessReview asks, checked as `ValidateSubjectAccessReviewSpec` does."""
    resource, non_resource = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
    if (resource is None) == (non_resource is None):
        raise invalid(
            "SubjectAccessReview.authorization.k8s.io",
            "",
            'spec.resourceAttributes: Invalid value: "null": exactly one of'
            " nonResourceAttributes or resourceAttributes must be specified",
        )
    if not spec.get("user") and not spec.get("groups"):
        raise invalid(
            "SubjectAccessReview.authorization.k8s.io",
            "",
            'spec.user: Invalid value: "": at least one of user or group must be specified',
        )
    if non_resource is not None:
        return rbac.Request(verb=non_resource.get("verb", ""), path=non_resource.get("path", ""))
    attributes: Obj = resource or {}
    return rbac.Request(
        verb=attributes.get("verb", ""),
        namespace=attributes.get("namespace", ""),
        group=attributes.get("group", ""),
        resource=attributes.get("resource", ""),
        subresource=attributes.get("subresource", ""),
        name=attributes.get("name", ""),
    )


async def _object(request: web.Request, kind: str) -> Obj:
    raw = await request.read()
    try:
        body = decode(raw) if raw else None
    except ValueError as exc:
        raise bad_request(f"the request body is not valid JSON: {exc}") from exc
    if not isinstance(body, dict):
        raise bad_request(f"the request body must be a {kind}")
    body.setdefault("metadata", {}).setdefault("creationTimestamp", None)
    return body


def _created(body: Obj) -> web.Response:
    return web.Response(body=encode(body), status=201, content_type="application/json")
