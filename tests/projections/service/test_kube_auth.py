"""Kubernetes authentication and authorization of the projections API, end to end against
the simulated API server's TokenReview and SubjectAccessReview: no token, no answer; a
user whom RBAC lets `get` Volcano Jobs in one namespace sees that namespace only, in the
job list, the counts, timelines, events (exports), what-if and the live stream; /metrics
needs its own grant."""

from __future__ import annotations

import asyncio
import json
import subprocess
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from lavalog.cli.main import main
from lavalog.controller.auth.kubernetes import CACHE_SECONDS, KubernetesAuth
from lavalog.controller.kube import connect
from lavalog.projections.service.app import create_app
from lavalog.projections.service.live import LiveHub
from lavalog.projections.service.sources.file import read_file
from lavalog.projections.service.store.queries import Queries
from lavalog.projections.service.store.writer import Store, load
from lavalog.simulator import registry
from lavalog.simulator.server import SimulatedCluster
from tests.projections.helpers import LAST_WORDS, failing_job, sidecar_job, write_events
from tests.projections.service.test_api import Status, many_jobs
from tests.simulator.test_kubectl import kubectl_path
from tests.simulator.test_reviews import binding

__all__ = ["kubectl_path"]  # the fixture

pytestmark = [pytest.mark.integration, pytest.mark.cluster(nodes=0), pytest.mark.timeout(60)]

Client = TestClient[web.Request, web.Application]
Obj = dict[str, Any]
RBAC = "rbac.authorization.k8s.io/v1"
#: many_jobs: tf-mnist and 8 more in team-a, 8 each in team-b and team-c
TEAM_A_JOBS = 9


def _grant(cluster: SimulatedCluster) -> None:
    """alice and team-a's `reader` service account may get team-a's jobs; the group
    `auditors` every namespace's, and /metrics; `prometheus` only /metrics."""
    objects = cluster.objects
    for namespace in ("team-a", "team-b", "team-c"):
        objects.create(registry.NAMESPACE, "", {"metadata": {"name": namespace}})
    objects.create(registry.SERVICE_ACCOUNT, "team-a", {"metadata": {"name": "reader"}})
    jobs = {"apiGroups": ["batch.volcano.sh"], "resources": ["jobs"], "verbs": ["get", "list"]}
    metrics = {"nonResourceURLs": ["/metrics"], "verbs": ["get"]}
    role = {"kind": "Role", "metadata": {"name": "job-reader", "namespace": "team-a"}}
    objects.create(registry.ROLE, "team-a", {**role, "rules": [jobs]})
    readers = [
        {"kind": "User", "name": "alice", "apiGroup": "rbac.authorization.k8s.io"},
        {"kind": "ServiceAccount", "name": "reader", "namespace": "team-a"},
    ]
    objects.create(
        registry.ROLE_BINDING, "team-a", binding("RoleBinding", "job-readers", role, readers)
    )
    for name, rules, subject in (
        ("job-auditor", [jobs, metrics], {"kind": "Group", "name": "auditors"}),
        ("metrics-reader", [metrics], {"kind": "User", "name": "prometheus"}),
    ):
        cluster_role = {"kind": "ClusterRole", "metadata": {"name": name}}
        objects.create(registry.CLUSTER_ROLE, "", {**cluster_role, "rules": rules})
        objects.create(
            registry.CLUSTER_ROLE_BINDING,
            "",
            binding("ClusterRoleBinding", name, cluster_role, [subject]),
        )
    cluster.tokens.add("alice-token", "alice", ("developers",))
    cluster.tokens.add("auditor-token", "carol", ("auditors",))
    cluster.tokens.add("prometheus-token", "prometheus")


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


ALICE, AUDITOR = bearer("alice-token"), bearer("auditor-token")


@pytest.fixture
def store(tmp_path: Path) -> Store:
    store = Store(tmp_path / "s.sqlite")
    load(store, read_file(write_events(tmp_path / "log.jsonl", many_jobs())))
    return store


class Clock:
    """The reviews' cache clock, moved by the test."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Served:
    client: Client
    hub: LiveHub
    auth: KubernetesAuth
    clock: Clock


@pytest.fixture
async def served(store: Store, sim_cluster: SimulatedCluster) -> AsyncIterator[Served]:
    _grant(sim_cluster)
    hub = LiveHub()
    queries = Queries(store.location)
    clock = Clock()
    async with connect(str(sim_cluster.kubeconfig_path)) as kube:
        auth = KubernetesAuth(kube, clock=clock)
        app = create_app(queries=queries, hub=hub, status=Status(), authenticator=auth)
        async with TestClient(TestServer(app)) as client:
            yield Served(client, hub, auth, clock)
    queries.close()


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/jobs",
        "/api/v1/stats",
        "/api/v1/stream",
        "/api/v1/jobs/team-a/job-00/events",
        "/metrics",
        "/",
        "/api/v1/openapi.json",
    ],
)
async def test_without_a_valid_token_nothing_but_the_probes_answers(
    served: Served, path: str
) -> None:
    client = served.client
    response = await client.get(path)
    assert response.status == 401
    assert response.headers["WWW-Authenticate"] == 'Bearer realm="lavalog"'
    response = await client.get(path, headers=bearer("made-up"))
    assert response.status == 401
    assert 'error="invalid_token"' in response.headers["WWW-Authenticate"]
    for probe in ("/healthz", "/readyz"):
        assert (await client.get(probe)).status == 200


async def test_a_namespace_limited_user_sees_only_their_namespace(
    served: Served,
) -> None:
    client = served.client
    page = await (await client.get("/api/v1/jobs?limit=1000", headers=ALICE)).json()
    assert {job["namespace"] for job in page["jobs"]} == {"team-a"}
    assert page["total"] == len(page["jobs"]) == TEAM_A_JOBS
    stats = await (await client.get("/api/v1/stats", headers=ALICE)).json()
    assert sum(stats["by_phase"].values()) == TEAM_A_JOBS
    assert (await client.get("/api/v1/jobs/team-a/job-00", headers=ALICE)).status == 200
    assert (await client.get("/api/v1/jobs/team-a/job-00/events", headers=ALICE)).status == 200
    everyone = await (await client.get("/api/v1/jobs?limit=1000", headers=AUDITOR)).json()
    assert everyone["total"] == 25


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/api/v1/jobs?namespace=team-b"),
        ("GET", "/api/v1/stats?namespace=team-b"),
        ("GET", "/api/v1/jobs/team-b/job-01"),
        ("GET", "/api/v1/jobs/team-b/job-01/events"),
        ("POST", "/api/v1/jobs/team-b/job-01/whatif"),
        ("GET", "/api/v1/stream?namespace=team-b"),
        ("GET", "/api/v1/stream?job=team-b/job-01"),
    ],
)
async def test_another_namespace_is_forbidden_as_kubernetes_says_it(
    served: Served, method: str, path: str
) -> None:
    client = served.client
    body = {"set": ["spec.maxRetry=5"]} if method == "POST" else None
    response = await client.request(method, path, headers=ALICE, json=body)
    assert response.status == 403
    assert (await response.json())["error"] == (
        'jobs.batch.volcano.sh is forbidden: User "alice" cannot get resource "jobs" in API'
        ' group "batch.volcano.sh" in the namespace "team-b"'
    )


async def test_the_stream_carries_only_the_readable_namespaces(
    served: Served, store: Store, tmp_path: Path
) -> None:
    client, hub = served.client, served.hub
    response = await client.get("/api/v1/stream", headers=ALICE)
    assert await response.content.readline() == b": stream open\n"
    later = failing_job(key="team-b/late", uid="u-late-b", start=9_000.0).log
    later += failing_job(key="team-a/late", uid="u-late-a", start=9_001.0).log
    hub.publish(
        await asyncio.to_thread(
            store.apply, list(read_file(write_events(tmp_path / "l.jsonl", later)))
        )
    )
    seen: list[str] = []
    while len(seen) < len(later) // 2:
        line = await asyncio.wait_for(response.content.readline(), 10)
        if line.startswith(b"data: "):
            seen.append(json.loads(line[6:])["key"])
    assert set(seen) == {"team-a/late"}
    response.close()


async def test_last_words_reach_only_those_who_may_read_the_job(
    served: Served, store: Store, tmp_path: Path
) -> None:
    """A failed container's termination message (its last words) is served with the job's
    timeline and events, to those RBAC lets get the job, and to nobody else: not in the
    list, the counts, a what-if or the stream, whatever they ask for."""
    client, hub = served.client, served.hub
    stream = await client.get("/api/v1/stream", headers=ALICE)
    assert await stream.content.readline() == b": stream open\n"
    later = sidecar_job(key="team-b/oom", start=9_000.0)
    later += failing_job(key="team-a/after", uid="u-after", start=9_100.0).log
    hub.publish(
        await asyncio.to_thread(
            store.apply, list(read_file(write_events(tmp_path / "l.jsonl", later)))
        )
    )
    said = LAST_WORDS.splitlines()[-1]
    heard = b""
    while b'"key":"team-a/after"' not in heard:  # what alice may read, after the secret
        heard += await asyncio.wait_for(stream.content.readline(), 10)
    stream.close()
    assert said.encode() not in heard

    bodies = [
        await (await client.request(method, path, headers=ALICE, json=body)).text()
        for method, path, body in (
            ("GET", "/api/v1/jobs?limit=1000", None),
            ("GET", "/api/v1/stats", None),
            ("GET", "/api/v1/jobs/team-b/oom", None),
            ("GET", "/api/v1/jobs/team-b/oom/events", None),
            ("POST", "/api/v1/jobs/team-b/oom/whatif", {"set": ["spec.maxRetry=5"]}),
        )
    ]
    assert not [body for body in bodies if said in body]

    timeline = await (await client.get("/api/v1/jobs/team-b/oom", headers=AUDITOR)).json()
    attempts = [a for i in timeline["timeline"]["tasks"][0]["indexes"] for a in i["attempts"]]
    assert [c["message"] for c in attempts[-1]["containers"]] == ["", LAST_WORDS]
    events = await (await client.get("/api/v1/jobs/team-b/oom/events", headers=AUDITOR)).text()
    assert said in events


async def test_metrics_need_a_grant_of_their_path(
    served: Served,
) -> None:
    client = served.client
    denied = await client.get("/metrics", headers=ALICE)
    assert denied.status == 403
    assert (await denied.json())["error"] == 'forbidden: User "alice" cannot get path "/metrics"'
    for token in ("prometheus-token", "auditor-token"):
        scraped = await client.get("/metrics", headers=bearer(token))
        assert scraped.status == 200 and b"lavalog_jobs" in await scraped.read()
    # /metrics is all the prometheus user may read
    assert (await client.get("/api/v1/jobs", headers=bearer("prometheus-token"))).status == 200
    assert (await (await client.get("/api/v1/jobs", headers=bearer("prometheus-token"))).json())[
        "total"
    ] == 0


async def test_reviews_are_cached_briefly_and_a_revoked_binding_takes_effect_after(
    served: Served, sim_cluster: SimulatedCluster
) -> None:
    client, auth = served.client, served.auth
    assert (await client.get("/api/v1/jobs/team-a/job-00", headers=ALICE)).status == 200
    sent = auth.reviews
    for _ in range(5):
        assert (await client.get("/api/v1/jobs/team-a/job-00", headers=ALICE)).status == 200
    assert auth.reviews == sent  # one TokenReview and one SubjectAccessReview, kept
    sim_cluster.objects.delete(registry.ROLE_BINDING, "team-a", "job-readers")
    assert (await client.get("/api/v1/jobs/team-a/job-00", headers=ALICE)).status == 200
    served.clock.now += CACHE_SECONDS  # the answers kept expire
    assert (await client.get("/api/v1/jobs/team-a/job-00", headers=ALICE)).status == 403


async def test_an_unreachable_api_server_is_a_503_not_a_401(
    served: Served, sim_cluster: SimulatedCluster
) -> None:
    client = served.client
    sim_cluster.faults.error_rate = 1.0  # every review fails
    response = await client.get("/api/v1/jobs", headers=bearer("alice-token"))
    assert response.status == 503
    assert "cannot check who is asking" in (await response.json())["error"]


async def test_kubectl_create_token_and_the_cli_read_one_namespace(
    served: Served,
    sim_cluster: SimulatedCluster,
    kubectl_path: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The documented path: a service account's token from `kubectl create token`, given
    to the read commands with --server and --token-file."""
    client = served.client
    made = await asyncio.to_thread(
        subprocess.run,
        [
            kubectl_path,
            "--kubeconfig",
            str(sim_cluster.kubeconfig_path),
            "create",
            "token",
            "reader",
            "-n",
            "team-a",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    token_file = tmp_path / "token"
    token_file.write_text(made.stdout)
    server = str(client.make_url("/")).rstrip("/")
    remote = ("--server", server, "--token-file", str(token_file))

    code = await asyncio.to_thread(main, ["jobs", "-A", "-o", "json", *remote])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert {job["namespace"] for job in json.loads(out)} == {"team-a"}

    code = await asyncio.to_thread(main, ["export", "team-b/job-01", *remote])
    out, err = capsys.readouterr()
    assert code == 3 and out == ""
    assert 'User "system:serviceaccount:team-a:reader" cannot get resource "jobs"' in err
