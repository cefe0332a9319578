"""Kubernetes authentication and authorization of HTTP callers, delegated to the API server.

The authenticator of `--kubernetes-auth`, for the controller's `/metrics` and the
projections' API alike. As Kubernetes' aggregated API servers, kube-rbac-proxy and
controller-runtime's `filters.WithAuthenticationAndAuthorization` do: a caller's bearer
token goes to a TokenReview (`authentication.k8s.io/v1`), which says whom it is; each
access goes to a SubjectAccessReview (`authorization.k8s.io/v1`) for that user, which RBAC
answers. A caller reads the jobs of a namespace when RBAC lets them `get`
`jobs.batch.volcano.sh` there (of every namespace, when it lets them cluster-wide), and
`/metrics` when it lets them `get` that path (a `nonResourceURLs` rule). On the job page,
a caller RBAC lets `create` `commands.bus.volcano.sh` in the job's namespace may suspend,
resume or restart it: the Command is then created with the caller's own token
(`KubeViewer.as_caller`), so the API server authorizes it again and its audit log names
the caller, and the service account needs no right to create Commands.

Answers are cached for a short time, as the delegating authenticator and authorizer
of k8s.io/apiserver do (`NewDelegatingAuthenticationOptions`: 10 s; `cache.New` in
pkg/authentication/token/cache; `NewDelegatingAuthorizationOptions`: allowed and denied
10 s): a page load, its API calls and its stream ask once. Concurrent questions with the
same key share one review (`getOrWait`); a review that failed is not cached. Tokens are
keyed by their SHA-256, never kept as such. The service account needs to create both
reviews (the ClusterRole `system:auth-delegator`, bound to both of lavalog's service
accounts in deploy/base/rbac.yaml).
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import Awaitable, Callable, Collection, Hashable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import msgspec

from lavalog.controller.auth.middleware import Access, ReviewUnavailable, Viewer
from lavalog.controller.kube import Kube, KubeError, is_transient, speaking_as

TOKEN_REVIEWS = "/apis/authentication.k8s.io/v1/tokenreviews"
ACCESS_REVIEWS = "/apis/authorization.k8s.io/v1/subjectaccessreviews"


@dataclass(frozen=True)
class ResourceRule:
    """What a SubjectAccessReview asks of a namespace: a verb on a resource."""

    verb: str
    group: str
    resource: str

    def attributes(self, namespace: str) -> dict[str, str]:
        """The review's `resourceAttributes` ("" : every namespace)."""
        return {
            "verb": self.verb,
            "group": self.group,
            "resource": self.resource,
            "namespace": namespace,
        }


#: what a caller must be allowed to read a namespace's jobs
JOBS = ResourceRule("get", "batch.volcano.sh", "jobs")
#: what a caller must be allowed to suspend, resume or restart a namespace's jobs
COMMANDS = ResourceRule("create", "bus.volcano.sh", "commands")
#: seconds an answer is kept (k8s.io/apiserver's delegating defaults, allowed and denied)
CACHE_SECONDS = 10.0
#: answers kept at most (k8s.io/apiserver: 32 stripes of 128)
CACHE_ENTRIES = 4096
#: namespaces reviewed at once when a list needs many
CONCURRENT_REVIEWS = 16
#: seconds a review may take (the delegating options' ClientTimeout)
REVIEW_TIMEOUT = 10.0

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class _UserInfo(msgspec.Struct, frozen=True):
    username: str = ""
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: dict[str, tuple[str, ...]] = {}


class _TokenStatus(msgspec.Struct, frozen=True):
    authenticated: bool = False
    user: _UserInfo = _UserInfo()
    error: str = ""


class _TokenReview(msgspec.Struct, frozen=True):
    status: _TokenStatus = _TokenStatus()


class _AccessStatus(msgspec.Struct, frozen=True):
    allowed: bool = False


class _AccessReview(msgspec.Struct, frozen=True):
    status: _AccessStatus = _AccessStatus()


@dataclass(frozen=True)
class KubeUser:
    """A user as a TokenReview names them, and as a SubjectAccessReview is asked about."""

    name: str
    uid: str
    groups: tuple[str, ...]
    extra: tuple[tuple[str, tuple[str, ...]], ...]

    def spec(self) -> dict[str, Any]:
        return {
            "user": self.name,
            "uid": self.uid,
            "groups": list(self.groups),
            "extra": {key: list(values) for key, values in self.extra},
        }


@dataclass
class TimedCache(Generic[K, V]):
    """Answers kept `ttl` seconds; one computation per key at a time, errors not kept."""

    ttl: float
    entries: int
    clock: Callable[[], float] = time.monotonic
    _kept: dict[K, tuple[float, V]] = field(default_factory=dict)
    _pending: dict[K, asyncio.Future[V]] = field(default_factory=dict)

    async def get(self, key: K, compute: Callable[[], Awaitable[V]]) -> V:
        kept = self._kept.get(key)
        if kept is not None and kept[0] > self.clock():
            return kept[1]
        pending = self._pending.get(key)
        if pending is not None:
            return await asyncio.shield(pending)
        future: asyncio.Future[V] = asyncio.get_running_loop().create_future()
        self._pending[key] = future
        try:
            value = await compute()
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # retrieved: a lone failure is not "never retrieved"
            raise
        finally:
            del self._pending[key]
        future.set_result(value)
        self._kept.pop(key, None)
        self._kept[key] = (self.clock() + self.ttl, value)
        while len(self._kept) > self.entries:
            del self._kept[next(iter(self._kept))]  # the oldest
        return value


class KubernetesAuth:
    """The authenticator of `--kubernetes-auth`: TokenReview, then SubjectAccessReviews."""

    open = frozenset({Access.PROBE})

    def __init__(
        self,
        kube: Kube,
        *,
        cache_seconds: float = CACHE_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._kube = kube
        self._users: TimedCache[bytes, KubeUser | None] = TimedCache(
            cache_seconds, CACHE_ENTRIES, clock
        )
        self._access: TimedCache[tuple[KubeUser, ResourceRule, str, str], bool] = TimedCache(
            cache_seconds, CACHE_ENTRIES, clock
        )
        self.reviews = 0  # requests sent to the API server (tests count them)

    async def authenticate(self, token: bytes) -> Viewer | None:
        key = hashlib.sha256(token).digest()
        user = await self._users.get(key, lambda: self._review_token(token))
        return None if user is None else KubeViewer(self, user, token)

    async def allows(
        self, user: KubeUser, *, namespace: str = "", path: str = "", rule: ResourceRule = JOBS
    ) -> bool:
        """Whether RBAC lets `user` do `rule` (get jobs) in `namespace` ("" : in every
        namespace), or, with a `path`, get that path."""
        return await self._access.get(
            (user, rule, namespace, path),
            lambda: self._review_access(user, rule, namespace, path),
        )

    def as_caller(self, token: bytes) -> AbstractAsyncContextManager[Kube]:
        """A client of this API server that speaks as the holder of `token`."""
        return speaking_as(self._kube, token.decode())

    async def _review_token(self, token: bytes) -> KubeUser | None:
        body = {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenReview",
            "spec": {"token": token.decode(errors="replace")},
        }
        answer = await self._post(TOKEN_REVIEWS, body)
        status = msgspec.json.decode(answer, type=_TokenReview).status
        if not status.authenticated:
            return None
        info = status.user
        groups = info.groups
        if "system:authenticated" not in groups:  # as group.NewAuthenticatedGroupAdder
            groups = (*groups, "system:authenticated")
        extra = tuple(sorted(info.extra.items()))
        return KubeUser(info.username, info.uid, groups, extra)

    async def _review_access(
        self, user: KubeUser, rule: ResourceRule, namespace: str, path: str
    ) -> bool:
        attributes: dict[str, Any] = (
            {"nonResourceAttributes": {"path": path, "verb": "get"}}
            if path
            else {"resourceAttributes": rule.attributes(namespace)}
        )
        body = {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SubjectAccessReview",
            "spec": {**user.spec(), **attributes},
        }
        answer = await self._post(ACCESS_REVIEWS, body)
        return msgspec.json.decode(answer, type=_AccessReview).status.allowed

    async def _post(self, path: str, body: dict[str, Any]) -> bytes:
        self.reviews += 1
        try:
            return await self._kube.request("POST", path, body=body, request_timeout=REVIEW_TIMEOUT)
        except KubeError as exc:
            raise ReviewUnavailable(f"the Kubernetes API answered {exc}") from None
        except Exception as exc:
            if not is_transient(exc):
                raise
            raise ReviewUnavailable(f"the Kubernetes API did not answer ({exc!r})") from None


@dataclass(frozen=True)
class KubeViewer:
    """A caller authenticated by a TokenReview: reads what RBAC lets their user get, and
    acts with their own token."""

    auth: KubernetesAuth
    user: KubeUser
    #: the bearer token the caller showed (kept for this request only: never cached)
    token: bytes = field(repr=False)

    @property
    def name(self) -> str:
        return self.user.name

    async def may_read(self, namespace: str) -> bool:
        return await self.auth.allows(self.user, namespace=namespace)

    async def readable(self, namespaces: Collection[str]) -> frozenset[str] | None:
        if await self.may_read(""):
            return None  # every namespace, by a ClusterRoleBinding
        limit = asyncio.Semaphore(CONCURRENT_REVIEWS)

        async def allowed(namespace: str) -> bool:
            async with limit:
                return await self.may_read(namespace)

        ordered = sorted(set(namespaces))
        answers = await asyncio.gather(*(allowed(ns) for ns in ordered))
        return frozenset(ns for ns, yes in zip(ordered, answers, strict=True) if yes)

    async def may_scrape(self, path: str) -> bool:
        return await self.auth.allows(self.user, path=path)

    async def may_command(self, namespace: str) -> bool:
        return await self.auth.allows(self.user, namespace=namespace, rule=COMMANDS)

    def as_caller(self) -> AbstractAsyncContextManager[Kube]:
        return self.auth.as_caller(self.token)
