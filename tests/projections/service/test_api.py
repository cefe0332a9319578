"""The HTTP API through aiohttp's test client, over a store loaded from scripted logs."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field

import msgspec
import pytest
import yaml
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from lavalog.events.codec import LogEvent, to_builtins
from lavalog.events.observations import PodObserved
from lavalog.projections.service.app import create_app
from lavalog.projections.service.http import api
from lavalog.projections.service.live import LiveHub
from lavalog.projections.service.sources.file import read_file
from lavalog.projections.service.store.queries import Queries
from lavalog.projections.service.store.writer import Store, load
from tests.projections.helpers import failing_job, tf_job, write_events

pytestmark = pytest.mark.timeout(30)

NAMESPACES = ("team-a", "team-b", "team-c")


@dataclass
class Status:
    ready: bool = True
    error: str | None = None
    lags: dict[tuple[str, int], int] = field(default_factory=dict)

    def lag(self) -> Mapping[tuple[str, int], int]:
        return self.lags


def many_jobs() -> list[LogEvent]:
    """tf-mnist plus 24 one-pod jobs, 100 s apart, over three namespaces and two queues."""
    events = tf_job(start=1000.0).log
    for n in range(24):
        events += failing_job(
            key=f"{NAMESPACES[n % 3]}/job-{n:02}",
            uid=f"u-{n:02}",
            start=2000.0 + 100 * n,
            queue="batch" if n % 2 else "research",
        ).log
    return events


@pytest.fixture
def store(new_store, tmp_path) -> Store:
    """The jobs of `many_jobs` in a store of each database: the API reads both alike."""
    store = Store(new_store("s"))
    load(store, read_file(write_events(tmp_path / "log.jsonl", many_jobs())))
    return store


@pytest.fixture
async def client(
    store,
) -> AsyncIterator[tuple[TestClient[web.Request, web.Application], LiveHub, Status]]:
    hub, status = LiveHub(), Status()
    queries = Queries(store.location)
    app = create_app(queries=queries, hub=hub, status=status)
    async with TestClient(TestServer(app)) as client:
        yield client, hub, status
    queries.close()


async def get(client: TestClient[web.Request, web.Application], path: str, status: int = 200):
    response = await client.get(path)
    assert response.status == status, await response.text()
    return await response.json()


async def test_list_filters(client):
    http, _, _ = client
    everything = await get(http, "/api/v1/jobs?limit=1000")
    assert everything["total"] == 25 and everything["next"] is None
    assert everything["jobs"][0]["key"] == "team-c/job-23"  # newest first
    team_b = await get(http, "/api/v1/jobs?namespace=team-b&limit=1000")
    assert {j["key"] for j in team_b["jobs"]} == {f"team-b/job-{n:02}" for n in range(1, 24, 3)}
    batch = await get(http, "/api/v1/jobs?queue=batch&phase=Aborted")
    assert batch["total"] == 12
    completed = await get(http, "/api/v1/jobs?phase=Completed,Running")
    assert [j["key"] for j in completed["jobs"]] == ["team-a/tf-mnist"]
    searched = await get(http, "/api/v1/jobs?q=job-0")
    assert searched["total"] == 10


async def test_time_range_keeps_jobs_alive_in_it(client):
    http, _, _ = client
    # job-n is submitted at 2000+100n and ends Aborted (never finished: it can resume);
    # tf-mnist lives from 1000 to 1102 (Completed)
    window = await get(http, "/api/v1/jobs?since=1200&until=2250")
    assert [j["key"] for j in window["jobs"]] == [
        "team-c/job-02",
        "team-b/job-01",
        "team-a/job-00",
    ]
    finished_early = await get(http, "/api/v1/jobs?since=1102&until=1500")
    assert [j["key"] for j in finished_early["jobs"]] == ["team-a/tf-mnist"]
    rfc = await get(http, "/api/v1/jobs?until=1970-01-01T00:16:40Z")
    assert [j["key"] for j in rfc["jobs"]] == ["team-a/tf-mnist"]


async def test_pagination_visits_every_job_once(client):
    http, _, _ = client
    seen: list[str] = []
    url = "/api/v1/jobs?limit=7"
    pages = 0
    while url:
        page = await get(http, url)
        seen += [j["key"] for j in page["jobs"]]
        pages += 1
        url = f"/api/v1/jobs?limit=7&after={page['next']}" if page["next"] else ""
    everything = await get(http, "/api/v1/jobs?limit=1000")
    assert (pages, seen) == (4, [j["key"] for j in everything["jobs"]])


async def test_bad_parameters_are_400(client):
    http, _, _ = client
    for query in ("limit=0", "limit=x", "since=yesterday", "after=nonsense"):
        body = await get(http, f"/api/v1/jobs?{query}", status=400)
        assert body["error"]


async def test_one_job_timeline_and_its_raw_events(client):
    http, _, _ = client
    body = await get(http, "/api/v1/jobs/team-a/tf-mnist")
    timeline = body["timeline"]
    assert (timeline["phase"], timeline["retry_count"], len(body["incarnations"])) == (
        "Completed",
        1,
        1,
    )
    assert [t["name"] for t in timeline["tasks"]] == ["ps", "worker"]
    # the log's "now": the latest event of any job (job-23's), as RFC 3339 with a fraction
    assert body["as_of"] == "1970-01-01T01:12:01.000000Z"  # 4321 s
    events = await get(http, "/api/v1/jobs/team-a/tf-mnist/events")
    assert [e["event"] for e in events["events"]] == [
        msgspec.json.decode(msgspec.json.encode(to_builtins(e))) for e in tf_job().log
    ]
    tail = await get(
        http, f"/api/v1/jobs/team-a/tf-mnist/events?after={events['events'][-3]['seq']}"
    )
    assert len(tail["events"]) == 2
    await get(http, "/api/v1/jobs/team-a/nope", status=404)


async def test_stats_count_phases_queues_and_failure_reasons(client):
    http, _, _ = client
    stats = await get(http, "/api/v1/stats")
    assert stats["by_phase"] == {"Aborted": 24, "Completed": 1}
    assert stats["by_namespace"] == {"team-a": 9, "team-b": 8, "team-c": 8}
    assert stats["by_queue"] == {
        "batch": {"Aborted": 12},
        "research": {"Aborted": 12, "Completed": 1},
    }
    assert stats["job_failure_reasons"] == [{"reason": "PodFailed", "count": 24}]
    assert stats["pod_failure_reasons"] == [
        {"reason": "ExitCode:1", "count": 24},
        {"reason": "OOMKilled", "count": 1},
    ]
    only_a = await get(http, "/api/v1/stats?namespace=team-a")
    assert only_a["by_phase"] == {"Aborted": 8, "Completed": 1}


async def test_a_job_answers_with_its_kubernetes_events(client):
    """The Events the controller recorded on the Job, kept after Kubernetes drops them:
    one per phase change and per action, at the decision's time (tf_job: submitted at
    1000 s, the worker fails at 1040 s)."""
    http, _, _ = client
    body = await get(http, "/api/v1/jobs/team-a/tf-mnist")
    events = [(e["time"], e["type"], e["reason"]) for e in body["kube_events"]]
    assert events[:4] == [
        ("1970-01-01T00:16:40.000000Z", "Normal", "Pending"),
        ("1970-01-01T00:16:50.000000Z", "Normal", "Running"),
        ("1970-01-01T00:17:20.000000Z", "Normal", "ExecuteAction"),
        ("1970-01-01T00:17:20.000000Z", "Normal", "Restarting"),
    ]
    assert body["kube_events"][2]["message"] == (
        "Start to execute action RestartTask (on PodFailed, pod tf-mnist-worker-1, task"
        " worker, exit code 137; matched task worker policy 0; job was Running)"
    )
    assert [e["reason"] for e in body["kube_events"]][-1] == "Completed"
    assert body["may_command"] is False  # no Kubernetes identity to act with


async def test_a_job_answers_with_its_spec_as_yaml(client):
    http, _, _ = client
    body = await get(http, "/api/v1/jobs/team-a/tf-mnist/spec")
    assert (body["uid"], body["incarnation"]) == ("u-tf", 1)
    (version,) = body["specs"]
    assert (version["generation"], version["observed"]) == (1, "1970-01-01T00:16:40.000000Z")
    manifest = yaml.safe_load(version["yaml"])
    assert manifest["kind"] == "Job" and manifest["metadata"]["name"] == "tf-mnist"
    assert manifest["spec"]["tasks"][1]["policies"] == [
        {"event": "PodFailed", "action": "RestartTask"}
    ]
    await get(http, "/api/v1/jobs/team-a/nope/spec", status=404)
    await get(http, "/api/v1/jobs/team-a/tf-mnist/spec?incarnation=2", status=404)


async def test_stream_sends_matching_events_once_stored(client, store, tmp_path):
    http, hub, _ = client
    response = await http.get("/api/v1/stream?job=team-z/new&type=PodObserved")
    assert response.headers["Content-Type"] == "text/event-stream"
    assert await response.content.readline() == b": stream open\n"
    await response.content.readline()
    story = failing_job(key="team-z/new", uid="u-new", start=9000.0)
    other = failing_job(key="team-z/other", uid="u-other", start=9000.0)
    items = read_file(write_events(tmp_path / "new.jsonl", other.log + story.log))
    hub.publish(await asyncio.to_thread(store.apply, list(items)))
    lines = [await response.content.readline() for _ in range(4)]
    first_pod = next(e for e in story.log if isinstance(e, PodObserved))
    assert lines[1:] == [
        b"event: PodObserved\n",
        b"data: " + msgspec.json.encode(first_pod) + b"\n",
        b"\n",
    ]
    assert lines[0].startswith(b"id: ")
    response.close()


async def test_a_stream_whose_client_left_ends_quietly(store, monkeypatch, caplog):
    """A browser tab closed mid-stream is the normal end of a stream, not a server error.

    A real server and socket: aiohttp's test client ends the handler another way."""
    monkeypatch.setattr(api, "HEARTBEAT_SECONDS", 0.05)
    hub, queries = LiveHub(), Queries(store.location)
    runner = web.AppRunner(create_app(queries=queries, hub=hub, status=Status()))
    await runner.setup()
    try:
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        reader, writer = await asyncio.open_connection("127.0.0.1", runner.addresses[0][1])
        writer.write(b"GET /api/v1/stream HTTP/1.1\r\nHost: x\r\n\r\n")
        while b"stream open" not in await reader.readline():
            pass
        writer.close()
        await writer.wait_closed()
        for _ in range(100):  # the next heartbeats find the connection gone
            if not hub._subscribers:
                break
            await asyncio.sleep(0.05)
        assert not hub._subscribers
    finally:
        await runner.cleanup()
        queries.close()
    assert not [r for r in caplog.records if r.levelname == "ERROR"], caplog.text


async def test_metrics_health_and_readiness(client):
    http, _, status = client
    status.lags[("lavalog.observed", 3)] = 7
    response = await http.get("/metrics")
    text = await response.text()
    assert 'lavalog_jobs{phase="Completed",queue="research"} 1.0' in text
    assert 'lavalog_restarts_total{action="RestartTask",reason="PodFailed"} 1.0' in text
    assert 'lavalog_job_time_to_running_seconds_bucket{le="5.0"} 24.0' in text
    assert "lavalog_job_time_to_running_seconds_count 25.0" in text
    # only finished jobs (Completed, Terminated, Failed) count: tf-mnist ran 85 s
    assert 'lavalog_job_run_time_seconds_bucket{le="60.0"} 0.0' in text
    assert 'lavalog_job_run_time_seconds_bucket{le="300.0"} 1.0' in text
    assert "lavalog_job_run_time_seconds_sum 85.0" in text
    assert 'lavalog_projections_consumer_lag{partition="3",topic="lavalog.observed"} 7.0' in text
    assert (await get(http, "/healthz")) == {"status": "ok"}
    assert (await get(http, "/readyz")) == {"status": "ready"}
    status.ready, status.error = False, "KafkaError: gone"
    await get(http, "/readyz", status=503)
    await get(http, "/healthz", status=503)


async def test_the_ui_is_served(client):
    http, _, _ = client
    index = await http.get("/")
    assert "lavalog" in await index.text()
    script = await http.get("/ui/app.js")
    assert script.status == 200


async def test_an_unknown_phase_is_400_and_a_missing_incarnation_404(client):
    http, _, _ = client
    body = await get(http, "/api/v1/jobs?phase=Running,Bogus", status=400)
    assert body["error"].startswith("phase: no phase 'Bogus'; one of Pending, Running,")
    body = await get(http, "/api/v1/stats?phase=bogus", status=400)
    assert body["error"].startswith("phase: no phase 'bogus'")
    body = await get(http, "/api/v1/jobs/team-a/tf-mnist?incarnation=9", status=404)
    assert body == {"error": "no incarnation 9 of team-a/tf-mnist: it has 1"}
