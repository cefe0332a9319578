"""Two `projections serve` replicas on one PostgreSQL store, fed by the development broker.

The first writes; the second serves the same answers from the shared database and streams
what the first applies; when the first is killed, the second takes over its lock and
feeds the store on from the stored positions: nothing lost, nothing doubled.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from lavalog.cli.main import main
from lavalog.projections.service.sources.file import read_file
from lavalog.projections.service.store.database import NotLeader, StoreUnreachable
from lavalog.projections.service.store.postgres import PostgresLocation
from lavalog.projections.service.store.queries import Queries
from lavalog.projections.service.store.writer import Store, load
from tests.projections.helpers import decided_examples, event_count, snapshot, write_events
from tests.projections.service.test_kafka import produce
from tests.projections.service.test_serve import _get, _ready, _started

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


def _until(condition, what: str, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting until {what}"
        time.sleep(0.1)


@contextmanager
def _stream(base: str) -> Iterator[socket.socket]:
    """An open `/api/v1/stream` (subscribed once this yields)."""
    host, port = base.removeprefix("http://").rstrip("/").split(":")
    with socket.create_connection((host, int(port)), timeout=30) as client:
        client.sendall(b"GET /api/v1/stream HTTP/1.1\r\nHost: x\r\n\r\n")
        received = b""
        while b"stream open" not in received:
            received += client.recv(4096)
        yield client


def _sequence_numbers(client: socket.socket, count: int) -> list[int]:
    """The `id`s of the next `count` events of a stream."""
    received = b""
    while received.count(b"\nid: ") + received.startswith(b"id: ") < count:
        chunk = client.recv(65536)
        assert chunk, "the stream ended"
        received += chunk
    lines = (b"\n" + received).split(b"\nid: ")[1:]
    return [int(line.split(b"\n", 1)[0]) for line in lines]


def _jobs(base: str) -> dict[str, str]:
    return {job["key"]: job["phase"] for job in _get(base + "api/v1/jobs?limit=100")["jobs"]}


async def test_a_second_replica_follows_the_writer_and_takes_over_when_it_dies(
    kafka_settings, kafka_broker, postgres_server, spawn, tmp_path
):
    events = decided_examples()
    first, second = len(events) // 3, 2 * len(events) // 3
    store = PostgresLocation(postgres_server.new_database("replicas"))
    environment = {
        "LAVALOG_BOOTSTRAP_SERVERS": kafka_broker,
        "LAVALOG_TOPIC_PREFIX": kafka_settings.topic_prefix,
        "LAVALOG_SESSION_TIMEOUT_MS": str(kafka_settings.session_timeout_ms),
        "LAVALOG_HEARTBEAT_INTERVAL_MS": str(kafka_settings.heartbeat_interval_ms),
        "LAVALOG_STORE": store.url,
    }
    group = f"projections-{uuid.uuid4().hex[:6]}"
    args = ["projections", "serve", "--group-id", group, "--port", "0"]

    await produce(kafka_settings, events[:first])
    writer = spawn(*args, env={**os.environ, **environment})
    writer_url = _started(writer)
    _ready(writer_url)
    _until(lambda: event_count(store) == first, "the writer applied the first third")

    follower = spawn(*args, env={**os.environ, **environment})
    follower_url = _started(follower)
    _ready(follower_url)
    assert _jobs(follower_url) == _jobs(writer_url) != {}

    with _stream(follower_url) as stream:
        await produce(kafka_settings, events[first:second])
        assert _sequence_numbers(stream, second - first) == list(range(first + 1, second + 1))
    assert event_count(store) == second  # the follower wrote nothing

    writer.send_signal(signal.SIGKILL)  # its connection, and with it the lock, goes
    writer.wait()
    await produce(kafka_settings, events[second:] + events[:5])  # a redelivered head too
    _until(lambda: event_count(store) == len(events), "the follower took over", seconds=90)
    # ready once its source reports caught up, which may be the poll after the last batch
    _ready(follower_url)

    expected = Store(PostgresLocation(postgres_server.new_database("expected")))
    load(expected, read_file(write_events(tmp_path / "log.jsonl", events)))
    _until(lambda: snapshot(store) == snapshot(expected.location), "every job row is written")
    expected.close()


def test_a_store_has_one_writer_and_a_rebuild_waits_for_it_to_stop(
    postgres_server, tmp_path, capsys
):
    store = PostgresLocation(postgres_server.new_database("one_writer"))
    log = write_events(tmp_path / "log.jsonl", decided_examples())
    writer = Store(store)
    with pytest.raises(NotLeader, match="another lavalog process writes"):
        Store(store)
    rebuild = ["projections", "rebuild", "--store", store.url, "--from-file", str(log)]
    assert main(rebuild) == 1
    assert capsys.readouterr().err == (
        f"lavalog projections rebuild: a `lavalog projections serve` writes {store}: "
        "stop it first\n"
    )
    writer.close()  # the lock goes with the writer's connection
    assert main(rebuild) == 0
    assert event_count(store) == len(decided_examples())
    Store(store).close()


def test_after_a_server_restart_readers_reconnect_and_the_writer_stops_in_one_line(
    postgres_server, tmp_path
):
    store = PostgresLocation(postgres_server.new_database("restart"))
    items = list(read_file(write_events(tmp_path / "log.jsonl", decided_examples())))
    writer = Store(store)
    load(writer, items[:50])
    queries = Queries(store)
    assert queries.last_seq() == 50
    postgres_server.restart()
    assert queries.last_seq() == 50  # a new connection: the API goes on answering
    lost = f"^lost the projections store at {re.escape(str(store))}: "
    with pytest.raises(StoreUnreachable, match=lost):
        writer.apply(items[50:60])
    writer.close()
    resumed = Store(store)  # the lock went with the lost connection
    assert resumed.positions(items[0].position.source) == {0: 50}  # the batch rolled back
    load(resumed, items[50:])
    assert queries.last_seq() == event_count(store) == len(items)
    resumed.close()
    queries.close()
