"""The pure parts: relist differences, watch lines, retries, redelivery, lease expiry."""

from __future__ import annotations

import msgspec
import pytest

from lavalog.controller.watchers.core.changes import (
    ChangeType,
    Gone,
    WatchError,
    parse,
    relisted,
    remember,
)
from lavalog.controller.watchers.core.lease import Sighting
from lavalog.controller.watchers.core.objects import Lease, LeaseSpec, ObjectMeta, Pod
from lavalog.controller.watchers.core.resend import to_resend
from lavalog.events.observations import JobDeleted


def obj(uid: str, rv: str) -> Pod:
    return Pod(
        metadata=ObjectMeta(name=f"pod-{uid}", namespace="default", uid=uid, resource_version=rv)
    )


def test_relist_reports_what_changed_while_away_deletions_first() -> None:
    known = {"a": obj("a", "1"), "b": obj("b", "2"), "c": obj("c", "3")}
    changes = relisted(known, [obj("a", "1"), obj("c", "9"), obj("d", "8")])
    assert [(c.type, c.obj.metadata.uid, c.obj.metadata.resource_version) for c in changes] == [
        (ChangeType.DELETED, "b", "2"),  # with its last known state
        (ChangeType.MODIFIED, "c", "9"),
        (ChangeType.ADDED, "d", "8"),
    ]
    remember(known, changes)
    assert {uid: o.metadata.resource_version for uid, o in known.items()} == {
        "a": "1",
        "c": "9",
        "d": "8",
    }


def test_first_list_is_all_added() -> None:
    assert [c.type for c in relisted({}, [obj("a", "1"), obj("b", "2")])] == [ChangeType.ADDED] * 2


def line(kind: str, body: object) -> bytes:
    return msgspec.json.encode({"type": kind, "object": body})


def pod_line(kind: str, uid: str, rv: str) -> bytes:
    return line(
        kind, {"kind": "Pod", "metadata": {"name": f"pod-{uid}", "uid": uid, "resourceVersion": rv}}
    )


DECODER = msgspec.json.Decoder(Pod)


def test_watch_lines_and_bookmarks_move_the_position() -> None:
    parsed = parse(
        [
            pod_line("ADDED", "a", "5"),
            pod_line("MODIFIED", "a", "6"),
            line("BOOKMARK", {"kind": "Pod", "metadata": {"resourceVersion": "9"}}),
            pod_line("DELETED", "a", "10"),
            line("BOOKMARK", {"kind": "Pod", "metadata": {"resourceVersion": "12"}}),
        ],
        DECODER,
    )
    assert [(c.type, c.obj.metadata.resource_version) for c in parsed.changes] == [
        (ChangeType.ADDED, "5"),
        (ChangeType.MODIFIED, "6"),
        (ChangeType.DELETED, "10"),
    ]
    assert (parsed.resource_version, parsed.error) == ("12", None)


@pytest.mark.parametrize(("code", "error"), [(410, Gone), (500, WatchError)])
def test_an_error_event_ends_the_batch_after_the_changes_before_it(
    code: int, error: type[Exception]
) -> None:
    status = {
        "kind": "Status",
        "status": "Failure",
        "code": code,
        "reason": "Expired",
        "message": "too old resource version: 3 (7)",
    }
    parsed = parse(
        [pod_line("ADDED", "a", "5"), line("ERROR", status), pod_line("ADDED", "b", "6")], DECODER
    )
    assert [c.obj.metadata.uid for c in parsed.changes] == ["a"]
    assert parsed.resource_version == "5"
    assert isinstance(parsed.error, error)


def deleted(key: str, n: int) -> JobDeleted:
    return JobDeleted(id=f"{key}#{n}", key=key, job_uid="u", time=0.0)


def test_a_failed_delivery_is_sent_again_with_its_jobs_later_messages() -> None:
    batch = [
        deleted("ns/a", 1),
        deleted("ns/b", 1),
        deleted("ns/a", 2),
        deleted("ns/b", 2),
        deleted("ns/c", 1),
    ]
    failures = [None, RuntimeError("timeout"), None, None, None]
    assert [o.id for o in to_resend(batch, failures)] == ["ns/b#1", "ns/b#2"]
    assert to_resend(batch, [None] * 5) == []


def lease(holder: str, renewed: str | None) -> Lease:
    return Lease(
        spec=LeaseSpec(holder_identity=holder, renew_time=renewed, lease_duration_seconds=15)
    )


def test_a_lease_expires_by_the_candidates_clock_from_when_it_saw_the_last_renewal() -> None:
    seen = Sighting.update(None, lease("a", "10:00:00.000001"), now=100.0)
    assert Sighting.update(seen, lease("a", "10:00:00.000001"), now=110.0) is seen  # no renewal
    assert not seen.expired(15, now=114.9)
    assert seen.expired(15, now=115.0)
    renewed = Sighting.update(seen, lease("a", "10:00:05.000001"), now=112.0)
    assert not renewed.expired(15, now=120.0)
    assert Sighting.update(renewed, lease("", "10:00:06.000001"), now=113.0).expired(
        15, now=113.0
    )  # released
