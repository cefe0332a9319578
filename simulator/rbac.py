"""Kubernetes' RBAC authorizer over the Roles, ClusterRoles and bindings the cluster holds.

A request is allowed when a rule of a role bound to its user allows it; nothing denies.
The rules visited are those of every ClusterRoleBinding that names the user, then, for a
request in a namespace, those of every RoleBinding in that namespace that does
(`DefaultRuleResolver.VisitRulesFor`, pkg/registry/rbac/validation/rule.go). A binding
names the user by name (User), by one of its groups (Group), or as a service account
(ServiceAccount, namespace defaulting to the RoleBinding's: `appliesToUser`). A rule
allows a request when verb, API group, resource (`resource/subresource`, `*`,
`*/subresource`) and name match, or for a path outside the resources (`/metrics`) when
verb and URL (exact, `*`, or a `prefix*`) match (`RuleAllows`, plugin/pkg/auth/authorizer/
rbac/rbac.go, and pkg/apis/rbac/v1/evaluation_helpers.go).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from lavalog.simulator import registry
from lavalog.simulator.objects import Objects
from lavalog.simulator.selectors import parse as parse_selector

Obj = dict[str, Any]

#: what a service account's token authenticates as: `system:serviceaccount:NS:NAME`
SERVICE_ACCOUNT_PREFIX = "system:serviceaccount:"
#: the group every authenticated user is in (`group.NewAuthenticatedGroupAdder`)
AUTHENTICATED = "system:authenticated"


@dataclass(frozen=True, slots=True)
class User:
    """Who a token authenticates as (a TokenReview's `status.user`)."""

    name: str
    groups: tuple[str, ...] = ()
    uid: str = ""

    def to_json(self) -> Obj:
        info: Obj = {"username": self.name, "groups": list(self.groups)}
        if self.uid:
            info["uid"] = self.uid
        return info


def service_account_user(namespace: str, name: str, uid: str = "") -> User:
    """The user a service account's token is (`serviceaccount.UserInfo`)."""
    groups = ("system:serviceaccounts", f"system:serviceaccounts:{namespace}", AUTHENTICATED)
    return User(f"{SERVICE_ACCOUNT_PREFIX}{namespace}:{name}", groups, uid)


@dataclass(frozen=True, slots=True)
class Request:
    """What is asked (`authorizer.Attributes`): a resource request, or a path (`/metrics`)."""

    verb: str
    namespace: str = ""
    group: str = ""
    resource: str = ""
    subresource: str = ""
    name: str = ""
    #: set for a non-resource request
    path: str | None = None


def allowed_by(objects: Objects, user: User, request: Request) -> str | None:
    """Which binding allows `request` to `user` (`RBAC: allowed by ...`), None if none."""
    for source, rule in _rules_for(objects, user, request.namespace):
        if rule_allows(rule, request):
            return f"RBAC: allowed by {source}"
    return None


def rule_allows(rule: Obj, request: Request) -> bool:
    """`RuleAllows`: whether one PolicyRule allows the request."""
    verbs = rule.get("verbs") or []
    if "*" not in verbs and request.verb not in verbs:
        return False
    if request.path is not None:
        return any(_url_matches(url, request.path) for url in rule.get("nonResourceURLs") or [])
    groups = rule.get("apiGroups") or []
    if "*" not in groups and request.group not in groups:
        return False
    combined = (
        f"{request.resource}/{request.subresource}" if request.subresource else (request.resource)
    )
    resources = rule.get("resources") or []
    if not any(_resource_matches(r, combined, request.subresource) for r in resources):
        return False
    names = rule.get("resourceNames") or []
    return not names or request.name in names


def _resource_matches(rule_resource: str, combined: str, subresource: str) -> bool:
    if rule_resource in ("*", combined):
        return True
    return bool(subresource) and rule_resource == f"*/{subresource}"


def _url_matches(rule_url: str, path: str) -> bool:
    if rule_url in ("*", path):
        return True
    return rule_url.endswith("*") and path.startswith(rule_url.rstrip("*"))


def _rules_for(objects: Objects, user: User, namespace: str) -> Iterator[tuple[str, Obj]]:
    """(where from, rule) of every rule bound to `user`: cluster-wide, then in `namespace`."""
    for binding in _all(objects, registry.CLUSTER_ROLE_BINDING, None):
        subject = _subject_for(user, binding.get("subjects") or [], "")
        if subject is not None:
            source = f'ClusterRoleBinding "{binding["metadata"]["name"]}"'
            yield from ((source, rule) for rule in _role_rules(objects, binding, ""))
    if not namespace:
        return
    for binding in _all(objects, registry.ROLE_BINDING, namespace):
        subject = _subject_for(user, binding.get("subjects") or [], namespace)
        if subject is not None:
            source = f'RoleBinding "{binding["metadata"]["name"]}/{namespace}"'
            yield from ((source, rule) for rule in _role_rules(objects, binding, namespace))


def _all(objects: Objects, resource: registry.ResourceType, namespace: str | None) -> list[Obj]:
    everything = parse_selector(None, None, resource.field_labels)
    return [entry.obj for entry in objects.list(resource, namespace, everything).items]


def _role_rules(objects: Objects, binding: Obj, namespace: str) -> list[Obj]:
    """`GetRoleReferenceRules`: the rules of the Role or ClusterRole the binding refers to
    (none when it does not exist: RBAC then only reports a resolution error)."""
    ref = binding.get("roleRef") or {}
    if ref.get("kind") == "ClusterRole":
        role = objects.find(registry.CLUSTER_ROLE, "", ref.get("name", ""))
    elif ref.get("kind") == "Role" and namespace:
        role = objects.find(registry.ROLE, namespace, ref.get("name", ""))
    else:
        role = None
    return list((role or {}).get("rules") or [])


def _subject_for(user: User, subjects: list[Obj], namespace: str) -> Obj | None:
    """`appliesTo`: the first subject of a binding that names `user`."""
    for subject in subjects:
        kind, name = subject.get("kind"), subject.get("name", "")
        if kind == "User" and user.name == name:
            return subject
        if kind == "Group" and name in user.groups:
            return subject
        if kind == "ServiceAccount":
            account_namespace = subject.get("namespace") or namespace
            if account_namespace and user.name == (
                f"{SERVICE_ACCOUNT_PREFIX}{account_namespace}:{name}"
            ):
                return subject
    return None
