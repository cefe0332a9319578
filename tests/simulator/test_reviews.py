"""TokenReview, SubjectAccessReview and TokenRequest as kube-apiserver answers them: a token
is whom it was given to or issued for (`kubectl create token`), and RBAC's Roles,
ClusterRoles and bindings decide an access (lavalog.simulator.rbac)."""

from __future__ import annotations

import asyncio
import subprocess
from typing import Any

import aiohttp
import pytest
import yaml

from lavalog.simulator import rbac
from lavalog.simulator.reviews import ACCESS_REVIEWS, TOKEN_REVIEWS
from lavalog.simulator.server import SimulatedCluster
from tests.simulator.test_kubectl import kubectl_path

__all__ = ["kubectl_path"]  # the fixture, shared with test_kubectl

pytestmark = [pytest.mark.integration, pytest.mark.cluster(nodes=0, time_scale=1)]

Obj = dict[str, Any]

JOBS = {"group": "batch.volcano.sh", "resource": "jobs", "verb": "get"}


def _rule(**fields: Any) -> Obj:
    return {"apiGroups": [""], "resources": [], "verbs": [], **fields}


GET_JOBS = rbac.Request("get", "a", "batch.volcano.sh", "jobs")
GET_STATUS = rbac.Request("get", "a", "batch.volcano.sh", "jobs", "status")
GET_ONE = rbac.Request("get", "a", "batch.volcano.sh", "jobs", name="one")
JOB_RULE = _rule(apiGroups=["batch.volcano.sh"], resources=["jobs"], verbs=["get"])
ALL = _rule(apiGroups=["*"], resources=["*"], verbs=["*"])


# fmt: off
RULES = [
        (JOB_RULE, GET_JOBS, True),
        ({**JOB_RULE, "verbs": ["list"]}, GET_JOBS, False),
        ({**JOB_RULE, "apiGroups": ["batch"]}, GET_JOBS, False),
        (ALL, rbac.Request("delete", "a", "x", "y", "status"), True),
        (JOB_RULE, GET_STATUS, False),
        ({**JOB_RULE, "resources": ["*/status"]}, GET_STATUS, True),
        ({**JOB_RULE, "resources": ["jobs/status"]}, GET_STATUS, True),
        ({**JOB_RULE, "resourceNames": ["one"]}, GET_ONE, True),
        ({**JOB_RULE, "resourceNames": ["one"]}, GET_JOBS, False),
        ({"nonResourceURLs": ["/metrics"], "verbs": ["get"]}, rbac.Request("get", path="/metrics"), True),
        ({"nonResourceURLs": ["/api/*"], "verbs": ["get"]}, rbac.Request("get", path="/api/v1/jobs"), True),
        ({"nonResourceURLs": ["/metrics"], "verbs": ["get"]}, rbac.Request("get", path="/metricsx"), False),
        ({"nonResourceURLs": ["*"], "verbs": ["get"]}, rbac.Request("post", path="/metrics"), False),
        (ALL, rbac.Request("get", path="/metrics"), False),
]
# fmt: on


@pytest.mark.parametrize(("rule", "request_", "allowed"), RULES)
def test_a_rule_allows_as_rbacs_rule_allows(
    rule: Obj, request_: rbac.Request, allowed: bool
) -> None:
    assert rbac.rule_allows(rule, request_) is allowed


async def _post(cluster: SimulatedCluster, path: str, body: Obj) -> tuple[int, Obj]:
    async with (
        aiohttp.ClientSession() as session,
        session.post(cluster.url + path, json=body) as response,
    ):
        return response.status, await response.json()


async def _review(cluster: SimulatedCluster, token: str) -> tuple[int, Obj]:
    body = {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenReview",
        "spec": {"token": token},
    }
    return await _post(cluster, TOKEN_REVIEWS, body)


async def _may(cluster: SimulatedCluster, spec: Obj) -> bool:
    body = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec}
    status, answer = await _post(cluster, ACCESS_REVIEWS, body)
    assert status == 201, answer
    allowed: bool = answer["status"]["allowed"]
    return allowed


def _kubectl(
    kubectl: str, cluster: SimulatedCluster, *args: str, docs: list[Obj] | None = None
) -> str:
    result = subprocess.run(
        [kubectl, "--kubeconfig", str(cluster.kubeconfig_path), *args],
        input=yaml.safe_dump_all(docs) if docs is not None else None,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def binding(kind: str, name: str, role: Obj, subjects: list[Obj]) -> Obj:
    """A RoleBinding (`role` a Role of its namespace or a ClusterRole) or a
    ClusterRoleBinding of `role` to `subjects`."""
    metadata = {"name": name}
    if kind == "RoleBinding":
        metadata["namespace"] = role["metadata"].get("namespace", "")
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": kind,
        "metadata": metadata,
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": role["kind"],
            "name": role["metadata"]["name"],
        },
        "subjects": subjects,
    }


def _grants(kubectl: str, cluster: SimulatedCluster) -> None:
    """team-a's reader (a ServiceAccount) and alice (a user) may read team-a's jobs; the
    group `auditors` every namespace's, and /metrics."""
    reader_role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": "job-reader", "namespace": "team-a"},
        "rules": [
            {"apiGroups": ["batch.volcano.sh"], "resources": ["jobs"], "verbs": ["get", "list"]}
        ],
    }
    auditor = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "job-auditor"},
        "rules": [
            {"apiGroups": ["batch.volcano.sh"], "resources": ["jobs"], "verbs": ["get"]},
            {"nonResourceURLs": ["/metrics"], "verbs": ["get"]},
        ],
    }
    missing = {"kind": "ClusterRole", "metadata": {"name": "no-such-role"}}
    docs: list[Obj] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
        for ns in ("team-a", "team-b")
    ]
    docs += [
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": "reader", "namespace": "team-a"},
        },
        reader_role,
        # a ServiceAccount subject without a namespace is the binding's namespace's
        binding(
            "RoleBinding",
            "readers",
            reader_role,
            [{"kind": "ServiceAccount", "name": "reader"}, {"kind": "User", "name": "alice"}],
        ),
        auditor,
        binding("ClusterRoleBinding", "auditors", auditor, [{"kind": "Group", "name": "auditors"}]),
        # bound to a role that does not exist
        binding("ClusterRoleBinding", "dangling", missing, [{"kind": "User", "name": "bob"}]),
    ]
    _kubectl(kubectl, cluster, "apply", "-f", "-", docs=docs)


async def _reader_token(kubectl: str, cluster: SimulatedCluster, *flags: str) -> str:
    """The grants made, a token of team-a's `reader` from `kubectl create token`."""
    await asyncio.to_thread(_grants, kubectl, cluster)
    made = await asyncio.to_thread(
        _kubectl, kubectl, cluster, "create", "token", "reader", "-n", "team-a", *flags
    )
    return made.strip()


async def test_kubectl_create_token_issues_a_token_the_token_review_knows(
    kubectl_path: str,
    sim_cluster: SimulatedCluster,
) -> None:
    token = await _reader_token(kubectl_path, sim_cluster)

    status, answer = await _review(sim_cluster, token)

    assert status == 201
    assert answer["status"]["authenticated"] is True
    user = answer["status"]["user"]
    assert user["username"] == "system:serviceaccount:team-a:reader"
    assert user["groups"] == [
        "system:serviceaccounts",
        "system:serviceaccounts:team-a",
        "system:authenticated",
    ]
    assert user["uid"]


async def test_an_unknown_token_is_not_authenticated_and_an_empty_one_is_refused(
    sim_cluster: SimulatedCluster,
) -> None:
    status, answer = await _review(sim_cluster, "made-up")
    assert status == 201 and answer["status"] == {"user": {}}
    status, answer = await _review(sim_cluster, "")
    assert status == 400
    assert answer["message"] == "token is required for TokenReview in authentication"


async def test_an_issued_token_expires_on_the_clusters_clock(
    kubectl_path: str,
    sim_cluster: SimulatedCluster,
) -> None:
    token = await _reader_token(kubectl_path, sim_cluster, "--duration", "10m")
    assert (await _review(sim_cluster, token))[1]["status"]["authenticated"] is True
    sim_cluster.clock.advance(601)
    assert (await _review(sim_cluster, token))[1]["status"] == {"user": {}}


async def test_a_given_token_is_its_user_in_its_groups(sim_cluster: SimulatedCluster) -> None:
    sim_cluster.tokens.add("carol-token", "carol", ("auditors",))
    user = (await _review(sim_cluster, "carol-token"))[1]["status"]["user"]
    assert user == {"username": "carol", "groups": ["auditors", "system:authenticated"]}


async def test_access_reviews_follow_the_rbac_objects(
    kubectl_path: str,
    sim_cluster: SimulatedCluster,
) -> None:
    await asyncio.to_thread(_grants, kubectl_path, sim_cluster)
    reader = {"user": "system:serviceaccount:team-a:reader", "groups": ["system:serviceaccounts"]}
    in_a = {"resourceAttributes": {**JOBS, "namespace": "team-a"}}
    in_b = {"resourceAttributes": {**JOBS, "namespace": "team-b"}}
    anywhere = {"resourceAttributes": JOBS}
    metrics = {"nonResourceAttributes": {"path": "/metrics", "verb": "get"}}

    assert await _may(sim_cluster, {**reader, **in_a})
    assert not await _may(sim_cluster, {**reader, **in_b})
    assert not await _may(sim_cluster, {**reader, **anywhere})  # a Role is one namespace's
    assert not await _may(sim_cluster, {**reader, **metrics})
    assert await _may(sim_cluster, {"user": "alice", **in_a})
    assert not await _may(sim_cluster, {"user": "alice", **in_b})
    # a ServiceAccount of the same name in another namespace is someone else
    assert not await _may(sim_cluster, {"user": "system:serviceaccount:team-b:reader", **in_a})
    auditor = {"user": "carol", "groups": ["auditors"]}
    for spec in (in_a, in_b, anywhere, metrics):
        assert await _may(sim_cluster, {**auditor, **spec})
    assert not await _may(sim_cluster, {"user": "bob", **in_a})  # bound to a missing role
    assert await _may(sim_cluster, {"user": "root", "groups": ["system:masters"], **in_b})


async def test_an_access_review_names_the_binding_that_allowed_it(
    kubectl_path: str,
    sim_cluster: SimulatedCluster,
) -> None:
    await asyncio.to_thread(_grants, kubectl_path, sim_cluster)
    body = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {"user": "alice", "resourceAttributes": {**JOBS, "namespace": "team-a"}},
    }
    _, answer = await _post(sim_cluster, ACCESS_REVIEWS, body)
    assert answer["status"] == {
        "allowed": True,
        "reason": 'RBAC: allowed by RoleBinding "readers/team-a"',
    }


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"user": "alice"}, "exactly one of nonResourceAttributes or resourceAttributes"),
        (
            {"user": "alice", "resourceAttributes": JOBS, "nonResourceAttributes": {"path": "/"}},
            "exactly one of nonResourceAttributes or resourceAttributes",
        ),
        ({"resourceAttributes": JOBS}, "at least one of user or group must be specified"),
    ],
)
async def test_a_malformed_access_review_is_invalid(
    sim_cluster: SimulatedCluster, spec: Obj, message: str
) -> None:
    body = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec}
    status, answer = await _post(sim_cluster, ACCESS_REVIEWS, body)
    assert status == 422
    assert message in answer["message"]


async def _as(
    cluster: SimulatedCluster, token: str | None, method: str, path: str, body: Obj | None = None
) -> tuple[int, Obj]:
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    async with (
        aiohttp.ClientSession() as session,
        session.request(method, cluster.url + path, json=body, headers=headers) as response,
    ):
        return response.status, await response.json()


async def test_a_request_with_a_token_is_its_users_and_rbac_decides(
    kubectl_path: str,
    sim_cluster: SimulatedCluster,
) -> None:
    """As kube-apiserver: a token nobody was given is a 401; a request RBAC does not let the
    token's user make is a 403 in the API server's words; one it does is made, as that user.
    A request without a token is the kubeconfig's, an administrator's."""
    await asyncio.to_thread(_grants, kubectl_path, sim_cluster)
    sim_cluster.tokens.add("alice-token", "alice")
    sim_cluster.tokens.add("root-token", "root", ("system:masters",))
    users: list[tuple[str, str, str]] = []
    sim_cluster.on_request(lambda access: users.append((access.user, access.verb, access.resource)))
    jobs_a = "/apis/batch.volcano.sh/v1alpha1/namespaces/team-a/jobs"
    commands_a = "/apis/bus.volcano.sh/v1alpha1/namespaces/team-a/commands"
    command = {"metadata": {"name": "c"}, "action": "AbortJob"}

    assert await _as(sim_cluster, "made-up", "GET", jobs_a + "/x") == (
        401,
        {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": "Unauthorized",
            "reason": "Unauthorized",
            "code": 401,
        },
    )
    status, answer = await _as(sim_cluster, "alice-token", "POST", commands_a, command)
    assert (status, answer["reason"]) == (403, "Forbidden")
    assert answer["message"] == (
        'commands.bus.volcano.sh is forbidden: User "alice" cannot create resource "commands"'
        ' in API group "bus.volcano.sh" in the namespace "team-a"'
    )
    assert answer["details"] == {"group": "bus.volcano.sh", "kind": "commands"}
    status, answer = await _as(
        sim_cluster, "alice-token", "GET", "/api/v1/namespaces/team-a/pods/p"
    )
    assert answer["message"] == (
        'pods "p" is forbidden: User "alice" cannot get resource "pods" in API group ""'
        ' in the namespace "team-a"'
    )
    # the job-reader Role lets alice get team-a's jobs (there is none: a 404, not a 403)
    assert (await _as(sim_cluster, "alice-token", "GET", jobs_a + "/x"))[0] == 404
    assert (await _as(sim_cluster, "alice-token", "GET", jobs_a.replace("team-a", "team-b")))[
        0
    ] == 403
    assert (await _as(sim_cluster, "root-token", "POST", commands_a, command))[0] == 201
    assert (await _as(sim_cluster, None, "DELETE", commands_a + "/c"))[0] == 200
    assert users == [
        ("alice", "get", "jobs"),
        ("root", "create", "commands"),
        ("", "delete", "commands"),
    ]
