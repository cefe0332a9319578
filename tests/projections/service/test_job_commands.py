"""Suspend, resume and restart through the projections API, against the simulated API
server: a caller RBAC lets create `commands.bus.volcano.sh` in the job's namespace gets a
Command made exactly as `vcctl job suspend` makes it, created with their own token (the
API server names them, and has the last word); anyone else gets a 403, whatever the page
showed them; a browser's cookie does not carry a request from another site."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from lavalog.controller.auth.kubernetes import KubernetesAuth
from lavalog.controller.auth.middleware import EVERYONE
from lavalog.controller.commands import command_object
from lavalog.controller.kube import connect
from lavalog.projections.service.app import create_app
from lavalog.projections.service.live import LiveHub
from lavalog.projections.service.sources.file import read_file
from lavalog.projections.service.store.queries import Queries
from lavalog.projections.service.store.writer import Store, load
from lavalog.simulator import registry
from lavalog.simulator.access import Access
from lavalog.simulator.selectors import Selector
from lavalog.simulator.server import SimulatedCluster
from tests.e2e.jobs import job, task
from tests.projections.helpers import write_events
from tests.projections.service.test_api import Status, many_jobs

pytestmark = [pytest.mark.integration, pytest.mark.cluster(nodes=0), pytest.mark.timeout(60)]

Client = TestClient[web.Request, web.Application]
Obj = dict[str, Any]
COMMANDS = "/api/v1/jobs/team-a/tf-mnist/commands"
RBAC_GROUP = "rbac.authorization.k8s.io"
RBAC_YAML = Path(__file__).resolve().parents[3] / "deploy" / "base" / "rbac.yaml"


def shipped_role(name: str) -> Obj:
    """A ClusterRole of deploy/base/rbac.yaml."""
    documents = yaml.safe_load_all(RBAC_YAML.read_text())
    (role,) = [d for d in documents if d["kind"] == "ClusterRole" and d["metadata"]["name"] == name]
    return dict(role)


def grant(cluster: SimulatedCluster, namespace: str = "team-a") -> None:
    """alice and bob may read `namespace`'s jobs (deploy/'s lavalog-job-reader); alice may
    also suspend, resume and restart them (lavalog-job-commander), as docs/install.md
    binds them."""
    objects = cluster.objects
    if objects.find(registry.NAMESPACE, "", namespace) is None:
        objects.create(registry.NAMESPACE, "", {"metadata": {"name": namespace}})
    for role, users in (
        ("lavalog-job-reader", ("alice", "bob")),
        ("lavalog-job-commander", ("alice",)),
    ):
        objects.create(registry.CLUSTER_ROLE, "", shipped_role(role))
        subjects = [{"kind": "User", "name": u, "apiGroup": RBAC_GROUP} for u in users]
        objects.create(
            registry.ROLE_BINDING,
            namespace,
            {
                "metadata": {"name": role, "namespace": namespace},
                "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": role},
                "subjects": subjects,
            },
        )
    cluster.tokens.add("alice-token", "alice")
    cluster.tokens.add("bob-token", "bob")


ALICE = {"Authorization": "Bearer alice-token"}
BOB = {"Authorization": "Bearer bob-token"}


@dataclass
class Served:
    client: Client
    cluster: SimulatedCluster
    job: Obj
    #: (user, verb, resource) of every request the API server was sent
    requests: list[tuple[str, str, str]]

    def commands(self) -> list[Obj]:
        store = self.cluster.objects.store
        return [e.obj for e in store.scan(registry.COMMAND, "team-a", Selector())]


@pytest.fixture
async def served(tmp_path: Path, sim_cluster: SimulatedCluster) -> AsyncIterator[Served]:
    store = Store(tmp_path / "s.sqlite")
    load(store, read_file(write_events(tmp_path / "log.jsonl", many_jobs())))
    grant(sim_cluster)
    manifest = job("tf-mnist", task("worker", 1))
    manifest["metadata"]["namespace"] = "team-a"
    created = sim_cluster.objects.create(registry.JOB, "team-a", manifest).obj
    requests: list[tuple[str, str, str]] = []

    def heard(access: Access) -> None:
        requests.append((access.user, access.verb, access.resource))

    sim_cluster.on_request(heard)
    queries = Queries(store.location)
    async with connect(str(sim_cluster.kubeconfig_path)) as kube:
        app = create_app(
            queries=queries, hub=LiveHub(), status=Status(), authenticator=KubernetesAuth(kube)
        )
        async with TestClient(TestServer(app)) as client:
            yield Served(client, sim_cluster, created, requests)
    queries.close()


async def test_the_page_says_who_may_command(served: Served) -> None:
    for who, may in ((ALICE, True), (BOB, False)):
        page = await (await served.client.get("/api/v1/jobs/team-a/tf-mnist", headers=who)).json()
        assert page["may_command"] is may


async def test_an_allowed_caller_creates_vcctls_command_with_their_own_token(
    served: Served,
) -> None:
    response = await served.client.post(COMMANDS, json={"action": "suspend"}, headers=ALICE)
    answer = await response.json()
    assert response.status == 201, answer

    (command,) = served.commands()
    assert answer == {
        "namespace": "team-a",
        "name": command["metadata"]["name"],
        "action": "AbortJob",
        "job": "tf-mnist",
    }
    expected = command_object("team-a", "tf-mnist", served.job["metadata"]["uid"], "AbortJob")
    assert command["metadata"]["name"].startswith("tf-mnist-abortjob-")
    assert command["metadata"]["ownerReferences"] == expected["metadata"]["ownerReferences"]
    assert (command["target"], command["action"]) == (expected["target"], "AbortJob")
    # read the Job, then create the Command: both as alice, as `vcctl` would as her
    assert ("alice", "get", "jobs") in served.requests
    assert ("alice", "create", "commands") in served.requests
    assert [r for r in served.requests if r[2] == "commands"] == [("alice", "create", "commands")]


@pytest.mark.parametrize(("verb", "action"), [("resume", "ResumeJob"), ("restart", "RestartJob")])
async def test_resume_and_restart_are_their_volcano_actions(
    served: Served, verb: str, action: str
) -> None:
    response = await served.client.post(COMMANDS, json={"action": verb}, headers=ALICE)
    assert response.status == 201
    assert [c["action"] for c in served.commands()] == [action]


async def test_a_caller_not_allowed_is_refused_in_the_api_servers_words(served: Served) -> None:
    response = await served.client.post(COMMANDS, json={"action": "suspend"}, headers=BOB)
    assert response.status == 403
    assert (await response.json())["error"] == (
        'commands.bus.volcano.sh is forbidden: User "bob" cannot create resource "commands"'
        ' in API group "bus.volcano.sh" in the namespace "team-a"'
    )
    assert served.commands() == []
    assert [r for r in served.requests if r[0] == "bob"] == []  # nothing sent as bob


async def test_the_api_server_has_the_last_word(served: Served) -> None:
    """RBAC said yes a moment ago (the answer is kept 10 s), the binding is gone since: the
    Command is created with alice's own token, so the API server refuses it."""
    page = await (await served.client.get("/api/v1/jobs/team-a/tf-mnist", headers=ALICE)).json()
    assert page["may_command"] is True
    served.cluster.objects.delete(registry.ROLE_BINDING, "team-a", "lavalog-job-commander")
    response = await served.client.post(COMMANDS, json={"action": "suspend"}, headers=ALICE)
    assert response.status == 403
    assert 'cannot create resource "commands"' in (await response.json())["error"]
    assert served.commands() == []


async def test_a_job_gone_from_the_cluster_is_a_404(served: Served) -> None:
    served.cluster.objects.delete(registry.JOB, "team-a", "tf-mnist")
    response = await served.client.post(COMMANDS, json={"action": "suspend"}, headers=ALICE)
    assert response.status == 404
    assert '"tf-mnist" not found' in (await response.json())["error"]


@pytest.mark.parametrize(
    "body", [{"action": "abort"}, {"action": "delete"}, {"verb": "suspend"}, ["suspend"]]
)
async def test_only_the_three_commands_are_taken(served: Served, body: Any) -> None:
    response = await served.client.post(COMMANDS, json=body, headers=ALICE)
    assert response.status == 400
    assert "suspend" in (await response.json())["error"]
    assert served.commands() == []


async def test_another_namespace_is_forbidden_before_anything_else(served: Served) -> None:
    response = await served.client.post(
        "/api/v1/jobs/team-b/job-01/commands", json={"action": "suspend"}, headers=ALICE
    )
    assert response.status == 403
    assert 'cannot get resource "jobs"' in (await response.json())["error"]


async def test_the_sign_in_cookie_carries_no_request_from_another_site(served: Served) -> None:
    """A browser sends the cookie by itself, even with a form or a fetch of another site's
    page: a POST authenticated by the cookie must come from this server's own pages."""
    client = served.client
    client.session.cookie_jar.update_cookies({"lavalog_token": "alice-token"})
    own = f"http://{client.host}:{client.port}"
    for origin in ({"Origin": "https://evil.example"}, {"Origin": "null"}, {}):
        response = await client.post(COMMANDS, json={"action": "suspend"}, headers=origin)
        assert response.status == 403, origin
        assert "from another site refused" in (await response.json())["error"]
    assert served.commands() == []
    response = await client.post(COMMANDS, json={"action": "suspend"}, headers={"Origin": own})
    assert response.status == 201
    # a bearer token is not sent by a browser on its own: no Origin needed
    client.session.cookie_jar.clear()
    assert (await client.post(COMMANDS, json={"action": "resume"}, headers=ALICE)).status == 201


async def test_the_answers_match_the_openapi_document(served: Served) -> None:
    document = await (await served.client.get("/api/v1/openapi.json", headers=ALICE)).json()
    operation = document["paths"]["/api/v1/jobs/{namespace}/{name}/commands"]["post"]
    for who, status in ((ALICE, 201), (BOB, 403)):
        response = await served.client.post(COMMANDS, json={"action": "suspend"}, headers=who)
        assert response.status == status
        schema = operation["responses"][str(status)]["content"]["application/json"]["schema"]
        jsonschema.validate(await response.json(), {**schema, "components": document["components"]})


async def test_without_kubernetes_authentication_nobody_commands(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.sqlite")
    load(store, read_file(write_events(tmp_path / "log.jsonl", many_jobs())))
    queries = Queries(store.location)
    app = create_app(queries=queries, hub=LiveHub(), status=Status())
    async with TestClient(TestServer(app)) as client:
        page = await (await client.get("/api/v1/jobs/team-a/tf-mnist")).json()
        assert page["may_command"] is False
        response = await client.post(COMMANDS, json={"action": "suspend"})
        assert response.status == 403
        assert "--kubernetes-auth" in (await response.json())["error"]
    queries.close()
    with pytest.raises(PermissionError, match="--kubernetes-auth"):
        EVERYONE.as_caller()
