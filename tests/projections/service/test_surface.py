"""The projections HTTP surface: the bearer token, 400s for bad parameters, static files
only from the UI folder, RFC 3339 times, and the OpenAPI document against real answers."""

from __future__ import annotations

import argparse
import asyncio
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from lavalog.cli.commands import projections as projections_command
from lavalog.cli.commands import run as run_command
from lavalog.projections.service.app import create_app
from lavalog.projections.service.http import api
from lavalog.projections.service.http.auth import SharedToken, TokenFile
from lavalog.projections.service.live import LiveHub
from lavalog.projections.service.sources.file import read_file
from lavalog.projections.service.store.queries import Queries
from lavalog.projections.service.store.writer import Store, load
from tests.projections.helpers import write_events
from tests.projections.service.test_api import Status, many_jobs

pytestmark = pytest.mark.timeout(30)

Client = TestClient[web.Request, web.Application]
RFC3339_FRACTION = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")


@pytest.fixture
def store(tmp_path: Path) -> Store:
    """tf-mnist and 24 more jobs (tests/projections/service/test_api.py)."""
    store = Store(tmp_path / "s.sqlite")
    load(store, read_file(write_events(tmp_path / "log.jsonl", many_jobs())))
    return store


@pytest.fixture
def token_file(tmp_path: Path) -> Path:
    path = tmp_path / "token"
    path.write_text("s3cret-token\n")  # a Secret's file may end in a newline
    return path


@pytest.fixture
async def open_client(store: Store) -> AsyncIterator[Client]:
    queries = Queries(store.location)
    app = create_app(queries=queries, hub=LiveHub(), status=Status(), version="1.2.3")
    async with TestClient(TestServer(app)) as client:
        yield client
    queries.close()


@pytest.fixture
async def guarded(store: Store, token_file: Path) -> AsyncIterator[Client]:
    """The shared token, and room for one event stream (test_hardening.py fills it)."""
    queries = Queries(store.location)
    app = create_app(
        queries=queries,
        hub=LiveHub(max_streams=1),
        status=Status(),
        authenticator=SharedToken(TokenFile(token_file)),
    )
    async with TestClient(TestServer(app)) as client:
        yield client
    queries.close()


BEARER = {"Authorization": "Bearer s3cret-token"}


# --- the token ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "path", ["/api/v1/jobs", "/api/v1/jobs/team-a/tf-mnist", "/api/v1/stats", "/", "/ui/app.js"]
)
async def test_without_the_token_the_api_and_ui_answer_401(guarded: Client, path: str) -> None:
    response = await guarded.get(path)
    assert response.status == 401
    assert response.headers["WWW-Authenticate"] == 'Bearer realm="lavalog"'
    response = await guarded.get(path, headers={"Authorization": "Bearer s3cret-tokeX"})
    assert response.status == 401
    assert 'error="invalid_token"' in response.headers["WWW-Authenticate"]
    assert (await guarded.get(path, headers=BEARER)).status == 200


async def test_an_api_401_says_what_to_send(guarded: Client) -> None:
    response = await guarded.get("/api/v1/jobs", headers={"Accept": "text/html"})
    assert response.status == 401
    assert "Authorization: Bearer" in (await response.json())["error"]


async def test_a_browser_gets_the_sign_in_page_and_then_the_ui_with_the_cookie(
    guarded: Client,
) -> None:
    page = await guarded.get("/", headers={"Accept": "text/html"})
    assert page.status == 401
    assert 'id="sign-in"' in await page.text()
    guarded.session.cookie_jar.update_cookies({"lavalog_token": "s3cret-token"})
    assert (await guarded.get("/", headers={"Accept": "text/html"})).status == 200
    assert (await guarded.get("/api/v1/jobs")).status == 200


async def test_probes_and_metrics_stay_open(guarded: Client) -> None:
    for path in ("/healthz", "/readyz", "/metrics"):
        assert (await guarded.get(path)).status == 200, path


async def test_a_rotated_token_replaces_the_old_one_without_restart(
    guarded: Client, token_file: Path
) -> None:
    await asyncio.to_thread(token_file.write_text, "rotated-token-with-another-length")
    assert (await guarded.get("/api/v1/jobs", headers=BEARER)).status == 401
    rotated = {"Authorization": "Bearer rotated-token-with-another-length"}
    assert (await guarded.get("/api/v1/jobs", headers=rotated)).status == 200


def test_an_empty_or_missing_token_file_is_refused_at_start(tmp_path: Path) -> None:
    (tmp_path / "empty").write_text("\n")
    with pytest.raises(ValueError, match="is empty"):
        TokenFile(tmp_path / "empty")
    with pytest.raises(ValueError, match="No such file"):
        TokenFile(tmp_path / "missing")


# --- bad parameters and static files -------------------------------------------------


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("/api/v1/jobs?limit=0", "limit: expected 1 to"),
        ("/api/v1/jobs?limit=many", "limit: expected an integer, not 'many'"),
        ("/api/v1/jobs?since=yesterday", "since: expected epoch seconds or RFC 3339"),
        ("/api/v1/jobs?phase=Exploded", "phase: no phase 'Exploded'"),
        ("/api/v1/jobs?after=not-a-cursor", "after: not a cursor"),
        ("/api/v1/jobs?namespce=team-a", "unknown query parameter namespce; it takes"),
        ("/api/v1/jobs/team-a/tf-mnist?incarnation=two", "incarnation: expected an integer"),
        ("/api/v1/jobs/team-a/tf-mnist/events?after=-1", "after: expected 0 to"),
        ("/api/v1/stats?until=noon", "until: expected epoch seconds or RFC 3339"),
    ],
)
async def test_bad_parameters_get_a_400_that_names_them(
    open_client: Client, path: str, message: str
) -> None:
    response = await open_client.get(path)
    assert response.status == 400
    assert message in (await response.json())["error"]


@pytest.mark.parametrize(
    "path",
    [
        "/ui/../api.py",
        "/ui/%2e%2e/api.py",
        "/ui/..%2fapi.py",
        "/ui/%2e%2e%2f%2e%2e%2fpyproject.toml",
        "/ui/....//api.py",
        "/ui//etc/passwd",
    ],
)
async def test_static_files_come_only_from_the_ui_folder(open_client: Client, path: str) -> None:
    response = await open_client.get(path)
    body = await response.text()
    assert response.status in (403, 404), (response.status, body[:200])
    assert "import" not in body and "root:" not in body


async def test_the_ui_files_are_served(open_client: Client) -> None:
    for name in ("app.js", "style.css"):
        response = await open_client.get(f"/ui/{name}")
        assert response.status == 200
        assert await response.read() == (Path(api.__file__).parent / "ui" / name).read_bytes()


# --- times -------------------------------------------------------------------------------


async def test_times_are_rfc3339_with_a_fraction_and_durations_numbers(
    open_client: Client,
) -> None:
    jobs = (await (await open_client.get("/api/v1/jobs?namespace=team-a&limit=5")).json())["jobs"]
    assert jobs
    for job in jobs:
        assert RFC3339_FRACTION.match(job["submitted"]) and RFC3339_FRACTION.match(job["updated"])
        assert isinstance(job["run_time"], int | float)
    answer = await (await open_client.get("/api/v1/jobs/team-a/tf-mnist")).json()
    timeline = answer["timeline"]
    assert timeline["submitted"] == "1970-01-01T00:16:40.000000Z"  # 1000 s: tf_job(start=1000)
    assert all(RFC3339_FRACTION.match(p["start"]) for p in timeline["phases"])
    assert isinstance(timeline["queue_wait"], int | float)
    attempt = timeline["tasks"][0]["indexes"][0]["attempts"][0]
    assert RFC3339_FRACTION.match(attempt["created"])


# --- the OpenAPI document --------------------------------------------------------------


async def _document(client: Client) -> dict[str, Any]:
    response = await client.get("/api/v1/openapi.json")
    assert response.status == 200
    document: dict[str, Any] = await response.json()
    return document


async def test_every_route_is_in_the_openapi_document(open_client: Client) -> None:
    document = await _document(open_client)
    assert document["openapi"].startswith("3.1") and document["info"]["version"] == "1.2.3"
    routes = [
        (r.method.lower(), r.resource.canonical)
        for r in open_client.app.router.routes()
        if r.resource
    ]
    # everything but the UI's page and files, which are not the API
    served = {(m, p) for m, p in routes if m != "head" and p != "/" and not p.startswith("/ui")}
    described = {(m, p) for p, methods in document["paths"].items() for m in methods}
    assert served and served == described


def _validate(document: dict[str, Any], method: str, path: str, status: int, body: Any) -> None:
    operation = document["paths"][path][method]
    schema = operation["responses"][str(status)]["content"]["application/json"]["schema"]
    jsonschema.validate(body, {**schema, "components": document["components"]})


ANSWERS = [
    ("/api/v1/jobs?limit=3", "/api/v1/jobs", 200),
    ("/api/v1/jobs?limit=0", "/api/v1/jobs", 400),
    ("/api/v1/jobs/team-a/tf-mnist", "/api/v1/jobs/{namespace}/{name}", 200),
    ("/api/v1/jobs/team-a/job-00", "/api/v1/jobs/{namespace}/{name}", 200),
    ("/api/v1/jobs/team-a/missing", "/api/v1/jobs/{namespace}/{name}", 404),
    ("/api/v1/jobs/team-a/tf-mnist/events", "/api/v1/jobs/{namespace}/{name}/events", 200),
    ("/api/v1/jobs/team-a/tf-mnist/spec", "/api/v1/jobs/{namespace}/{name}/spec", 200),
    ("/api/v1/jobs/team-a/missing/spec", "/api/v1/jobs/{namespace}/{name}/spec", 404),
    ("/api/v1/stats", "/api/v1/stats", 200),
    ("/api/v1/openapi.json", "/api/v1/openapi.json", 200),
    ("/healthz", "/healthz", 200),
    ("/readyz", "/readyz", 200),
]


@pytest.mark.parametrize(("url", "path", "status"), ANSWERS)
async def test_answers_match_the_openapi_document(
    open_client: Client, url: str, path: str, status: int
) -> None:
    document = await _document(open_client)
    response = await open_client.get(url)
    assert response.status == status
    _validate(document, "get", path, status, await response.json())


async def test_the_whatif_answer_matches_the_openapi_document(open_client: Client) -> None:
    document = await _document(open_client)
    path = "/api/v1/jobs/{namespace}/{name}/whatif"
    response = await open_client.post(
        "/api/v1/jobs/team-a/job-00/whatif", json={"set": ["spec.maxRetry=5"]}
    )
    assert response.status == 200
    _validate(document, "post", path, 200, await response.json())
    bad = await open_client.post("/api/v1/jobs/team-a/job-00/whatif", json={"nope": 1})
    _validate(document, "post", path, 400, await bad.json())


async def test_the_document_says_which_routes_need_the_token(open_client: Client) -> None:
    paths = (await _document(open_client))["paths"]
    assert paths["/api/v1/jobs"]["get"]["security"] == [{"bearer": []}]
    assert "401" in paths["/api/v1/jobs"]["get"]["responses"]
    assert paths["/healthz"]["get"]["security"] == []


# --- where they listen ---------------------------------------------------------------


def _parsed(module: Any, argv: list[str], monkeypatch: pytest.MonkeyPatch) -> argparse.Namespace:
    for name in ("LAVALOG_HTTP_HOST", "LAVALOG_HTTP_PORT", "LAVALOG_API_TOKEN_FILE"):
        monkeypatch.delenv(name, raising=False)
    parser = argparse.ArgumentParser()
    module.configure(parser)
    return parser.parse_args(argv)


def test_the_http_listeners_default_to_this_machine_only(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _parsed(run_command, [], monkeypatch).http_host == "127.0.0.1"
    serve = _parsed(projections_command, ["serve"], monkeypatch)
    assert (serve.host, serve.token_file) == ("127.0.0.1", None)


def test_a_pod_sets_every_interface_and_the_token_file_by_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    parser = argparse.ArgumentParser()
    monkeypatch.setenv("LAVALOG_HTTP_HOST", "0.0.0.0")
    monkeypatch.setenv("LAVALOG_API_TOKEN_FILE", "/var/run/secrets/lavalog/token")
    projections_command.configure(parser)
    serve = parser.parse_args(["serve"])
    assert serve.host == "0.0.0.0"
    assert str(serve.token_file) == "/var/run/secrets/lavalog/token"
