"""Helpers shared by the projections tests: files of events and store snapshots."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from events.codec import LogEvent, read_jsonl, write_jsonl
from events.observations import Observation
from projections.service.database import FILE_NAME, Location, SqliteLocation, location_of
from projections.service.postgres import PostgresLocation


def write_events(path: Path, events: Iterable[LogEvent]) -> Path:
    path.write_bytes(b"".join(write_jsonl(events)))
    return path


def snapshot(store: Location | Path) -> dict[str, Any]:
    """Everything a store holds, without the log sequence numbers (they follow the
    interleaving of the two topics, which legitimately differs between consumptions)."""
    db = location_of(store).connect()
    try:
        return {
            "jobs": db.rows("SELECT * FROM jobs ORDER BY uid"),
            "events": sorted(
                db.rows("SELECT id, kind, type, key, job_uid, time, body FROM events")
            ),
            "actions": db.rows("SELECT * FROM actions ORDER BY id"),
            "pod_failures": db.rows("SELECT * FROM pod_failures ORDER BY pod_uid"),
            "pruned": db.rows("SELECT * FROM pruned ORDER BY uid"),
        }
    finally:
        db.close()


def event_count(store: Location | Path) -> int:
    db = location_of(store).connect()
    try:
        count: int = db.rows("SELECT COUNT(*) FROM events")[0][0]
        return count
    finally:
        db.close()


def store_arguments(store: Location) -> list[str]:
    """The command-line options naming a store: `--store URL`, or `--state-dir` of a file
    named as in a state directory (`new_store("state/projections")`)."""
    if isinstance(store, PostgresLocation):
        return ["--store", store.url]
    assert isinstance(store, SqliteLocation) and store.path.name == FILE_NAME, store
    return ["--state-dir", str(store.path.parent)]


EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def decided_examples() -> list[LogEvent]:
    """The recorded example jobs with the decisions the real decider makes of them, each
    observation followed by its decisions: a log as the controller writes it."""
    from controller.decider import replay

    observations = [
        event
        for path in sorted(EXAMPLES.glob("*.jsonl"))
        for event in read_jsonl(path.read_bytes().splitlines())
        if isinstance(event, Observation)
    ]
    return [
        event
        for observation, decisions in replay(observations)
        for event in (observation, *decisions)
    ]
