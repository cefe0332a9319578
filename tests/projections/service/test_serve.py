"""Serving as a process: `projections serve` stops cleanly on a signal, `replay --serve`
shows a recording's timelines, and a cancelled runner commits the batch in hand."""

from __future__ import annotations

import asyncio
import json
import signal
import socket
import sqlite3
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import pytest

from lavalog.controller.broker import free_port
from lavalog.events.codec import encode
from lavalog.projections.core.feed import Applied, Position, Sourced
from lavalog.projections.service.live import LiveHub, StreamFilter
from lavalog.projections.service.runner import Runner
from lavalog.projections.service.sources.file import read_file
from lavalog.projections.service.sources.memory import MemorySource
from lavalog.projections.service.store.database import Location
from lavalog.projections.service.store.writer import Store, store_path
from tests.projections.helpers import EXAMPLES, decided_examples, event_count, write_events


def _started(process: subprocess.Popen[str], marker: str = "http://") -> str:
    """The URL the process prints once it listens."""
    assert process.stdout is not None
    line = process.stdout.readline()
    assert marker in line, (line, process.stderr.read() if process.stderr else "")
    return line[line.index(marker) :].split()[0]


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=5) as response:
        return json.loads(response.read())


def _ready(base: str) -> None:
    deadline = time.monotonic() + 20
    while True:
        try:
            if _get(base + "readyz")["status"] == "ready":
                return
        except OSError:
            pass
        assert time.monotonic() < deadline, "never ready"
        time.sleep(0.1)


@contextmanager
def _stream_open(base: str) -> Iterator[None]:
    host, port = base.removeprefix("http://").rstrip("/").split(":")
    with socket.create_connection((host, int(port)), timeout=5) as client:
        client.sendall(b"GET /api/v1/stream HTTP/1.1\r\nHost: x\r\n\r\n")
        received = b""
        while b"stream open" not in received:
            received += client.recv(4096)
        yield


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_projections_serve_stops_cleanly_on_a_signal(tmp_path, spawn, stop):
    events = decided_examples()
    log = write_events(tmp_path / "log.jsonl", events)
    state = tmp_path / "state"
    process = spawn(
        "projections", "serve", "--from-file", str(log), "--state-dir", str(state), "--port", "0"
    )
    base = _started(process)
    _ready(base)
    with _stream_open(base):  # a browser tab left open does not hold the shutdown up
        process.send_signal(stop)
        _, err = process.communicate(timeout=20)
    assert process.returncode == 0, err
    assert "Traceback" not in err
    # closed: the last connection gone, SQLite folded its write-ahead log into the file
    assert not store_path(state).with_name("projections.sqlite-wal").exists()
    db = sqlite3.connect(store_path(state))
    try:
        assert db.execute("SELECT COUNT(*) FROM events").fetchone() == (len(events),)
    finally:
        db.close()


def test_replay_serve_shows_the_recording_with_its_recomputed_decisions(tmp_path, spawn):
    state = tmp_path / "state"
    process = spawn(
        "replay",
        str(EXAMPLES / "tensorflow-restart-task.jsonl"),
        "--serve",
        "--port",
        "0",
        "--state-dir",
        str(state),
    )
    base = _started(process)
    _ready(base)
    assert [job["key"] for job in _get(base + "api/v1/jobs")["jobs"]] == ["ml/tf-dist"]
    timeline = _get(base + "api/v1/jobs/ml/tf-dist")["timeline"]
    assert [p["phase"] for p in timeline["phases"]] == [
        "Pending",
        "Running",
        "Restarting",
        "Pending",
        "Running",
        "Completing",
        "Completed",
    ]
    # the decisions are the decider's, recomputed: the file holds observations only
    assert [(d["action"], d["trigger"]) for d in timeline["decisions"]] == [
        ("RestartTask", "PodFailed"),
        ("CompleteJob", "TaskCompleted"),
    ]
    bars = [a["outcome"] for t in timeline["tasks"] for i in t["indexes"] for a in i["attempts"]]
    assert bars == ["killed", "killed", "succeeded", "failed", "succeeded"]
    with urllib.request.urlopen(base, timeout=5) as page:
        assert b"<title>lavalog</title>" in page.read()
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=20)
    assert process.returncode == 0, err
    assert store_path(state).is_file()  # a given state directory is kept


def test_replay_serve_of_a_file_without_jobs_says_so(tmp_path, spawn):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    process = spawn("replay", str(empty), "--serve", "--port", "0")
    _, err = process.communicate(timeout=20)
    assert process.returncode == 1
    assert "no JobObserved event" in err


class _SlowStore(Store):
    """A store whose writes wait for the test's word, to be cancelled in the middle."""

    def __init__(self, location: Location) -> None:
        super().__init__(location)
        self.writing = threading.Event()
        self.go_on = threading.Event()

    def apply(self, batch: Sequence[Sourced]) -> list[Applied]:
        self.writing.set()
        assert self.go_on.wait(10)
        return super().apply(batch)


async def test_a_cancelled_runner_commits_the_batch_it_is_writing(new_store):
    events = decided_examples()
    store = _SlowStore(new_store("s"))
    run = asyncio.create_task(Runner(store, MemorySource(events, name="m")).run())
    await asyncio.to_thread(store.writing.wait, 10)
    run.cancel()
    await asyncio.sleep(0.2)
    assert not run.done()  # still waiting for the write: closing the store now would break it
    store.go_on.set()
    with pytest.raises(asyncio.CancelledError):
        await run
    assert store.positions("m") == {0: len(events)}
    store.close()


async def test_memory_source_feeds_everything_each_time(new_store, tmp_path):
    """Positions are not consulted: a second feeding is all duplicates, a no-op."""
    log = write_events(tmp_path / "log.jsonl", decided_examples())
    events = [item.event for item in read_file(log)]
    store = Store(new_store("s"))
    for _ in range(2):
        await Runner(store, MemorySource(events, name="m", batch_size=100)).run()
    assert event_count(store.location) == len(events)
    store.close()


class _Trickle:
    """A source of three batches from two partitions: the second is read once the first
    has committed, the third a moment after the second, as events trickle in."""

    def __init__(self, events: Sequence[Any], committed: threading.Event) -> None:
        self._events = events
        self._committed = committed
        self.caught_up = False

    def lag(self) -> dict[tuple[str, int], int]:
        return {}

    async def batches(self, store: Store) -> Any:
        third = len(self._events) // 3
        parts = [self._events[:third], self._events[third : 2 * third], self._events[2 * third :]]
        for number, part in enumerate(parts):
            if number == 1:
                assert await asyncio.to_thread(self._committed.wait, 10)
            if number == 2:
                await asyncio.sleep(0.05)  # the runner has taken the second batch by now
            yield [
                Sourced(event, encode(event), Position("m", (number + n) % 2, number * 100 + n))
                for n, event in enumerate(part)
            ]
        self.caught_up = True


async def test_batches_that_trickle_in_within_the_commit_interval_are_one_transaction(new_store):
    """Each transaction writes every job row it touched and its pages again: what arrives
    within the commit interval of the last transaction's start waits to join the next."""
    events = decided_examples()
    committed = threading.Event()
    commits: list[int] = []

    def commit() -> None:
        commits.append(1)
        committed.set()

    store = Store(new_store("s"), before_commit=commit)
    hub = LiveHub()
    async with hub.subscribe(StreamFilter()) as live:
        await Runner(store, _Trickle(events, committed), hub, commit_interval=2.0).run()
        published = [live.get_nowait() for _ in range(live.qsize())]
    assert len(commits) == 2  # the first batch alone, the other two together
    assert [item.event for item in published if item is not None] == events
    assert event_count(store.location) == len(events)
    third = len(events) // 3
    last = len(events) - 1 - 2 * third
    assert store.positions("m") == {(200 + last) % 2: 200 + last + 1, (201 + last) % 2: 200 + last}
    store.close()


@pytest.mark.parametrize("action", ["rebuild", "serve"])
def test_an_unreachable_broker_is_one_line(tmp_path, spawn, action):
    servers = f"127.0.0.1:{free_port()}"  # nothing listens there
    args = ["--state-dir", str(tmp_path), "--bootstrap-servers", servers]
    process = spawn("projections", action, *args, *(["--port", "0"] if action == "serve" else []))
    out, err = process.communicate(timeout=60)
    assert process.returncode == 1
    assert err.splitlines() == [
        f"lavalog projections {action}: cannot connect to Kafka at {servers}: connection "
        "refused, no broker listens there; start one (`lavalog broker` runs a development "
        "broker) or set --bootstrap-servers or $LAVALOG_BOOTSTRAP_SERVERS"
    ]
    assert out == ""  # checked before serving anything


def test_a_request_too_long_to_parse_is_a_400_and_one_json_warning(tmp_path, spawn):
    log = write_events(tmp_path / "log.jsonl", decided_examples())
    process = spawn(
        "projections", "serve", "--from-file", str(log), "--state-dir", str(tmp_path / "s"),
        "--port", "0",
    )  # fmt: skip
    base = _started(process)
    _ready(base)
    with pytest.raises(urllib.error.HTTPError) as refused:
        _get(f"{base}api/v1/jobs?q={'a' * 9_000}")
    assert refused.value.code == 400
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=20)
    assert process.returncode == 0
    lines = [json.loads(line) for line in err.splitlines()]  # stderr is not a terminal: JSON
    warnings = [line for line in lines if line["level"] != "info"]
    assert [(w["level"], w["logger"], w["event"]) for w in warnings] == [
        (
            "warning",
            "aiohttp.server",
            "bad request from 127.0.0.1 answered 400: Got more than 8190 bytes when reading",
        )
    ]
    assert "Traceback" not in err
