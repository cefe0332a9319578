"""Snapshots and restore, without a broker: a crash at any point loses nothing.

The partition's log is run with snapshots every few events; at a crash everything in
memory is lost, and only what was durably written survives: snapshot records (maybe a
snapshot cut short) and the committed offset. The restored decider must end in the same
states and, together with what was produced before the crash, produce exactly the
decisions of an uninterrupted run (duplicates allowed, nothing missing).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lavalog.controller.decider.core.due_timers import DueTimer
from lavalog.controller.decider.core.partition import PartitionDecider
from lavalog.controller.decider.core.snapshots import (
    Checkpoint,
    JobSnapshot,
    Restored,
    SettledJobSnapshot,
    decode_record,
    encode_record,
    restore,
)
from lavalog.events.decisions import TimerScheduled
from lavalog.events.observations import AnyObservation
from tests.examples.scripts import EXAMPLES
from tests.scenarios import JobScript

LOG: list[AnyObservation] = sorted(
    (event for script in EXAMPLES.values() for event in script()), key=lambda e: e.time
)


def uninterrupted() -> tuple[list[str], Mapping[str, Any]]:
    partition = PartitionDecider(Restored(), committed=0)
    ids = [d.id for offset, event in enumerate(LOG) for d in partition.apply(offset, event)]
    return ids, partition.states


def run_until_crash(
    snapshot_every: int, crash_at: int, snapshot_cut: int
) -> tuple[list[str], list[tuple[str, bytes | None]], int]:
    """Decisions produced, state records durably written, and the committed offset."""
    partition = PartitionDecider(Restored(), committed=0)
    produced: list[str] = []
    written: list[tuple[str, bytes | None]] = []
    committed = 0
    for offset, event in enumerate(LOG[:crash_at]):
        produced += [d.id for d in partition.apply(offset, event)]
        committed = offset + 1
        if committed % snapshot_every == 0:
            records = partition.snapshot(committed)
            if committed + snapshot_every > crash_at:
                records = records[:snapshot_cut]  # the crash cuts the last snapshot short
            written += [(k, None if r is None else encode_record(r)) for k, r in records]
    return produced, written, committed


@settings(max_examples=150, deadline=None)
@given(
    snapshot_every=st.integers(1, 40),
    crash_at=st.integers(0, len(LOG)),
    snapshot_cut=st.integers(0, 6),
)
def test_a_crash_anywhere_loses_no_decision_and_changes_no_state(
    snapshot_every, crash_at, snapshot_cut
):
    expected_ids, expected_states = uninterrupted()
    produced, written, committed = run_until_crash(snapshot_every, crash_at, snapshot_cut)

    restored = restore(written)
    partition = PartitionDecider(restored, committed=committed)
    for offset in range(restored.checkpoint, len(LOG)):
        produced += [d.id for d in partition.apply(offset, LOG[offset])]

    assert sorted(produced) == sorted(expected_ids)  # committed per event: no duplicates
    assert partition.states == expected_states


def test_a_snapshot_cut_short_at_any_point_is_restored_exactly():
    """The job records of a snapshot land, its checkpoint does not: restore must not
    apply the events those records already reflect a second time."""
    expected_ids, expected_states = uninterrupted()
    for crash_at in range(1, len(LOG) + 1):
        produced, written, committed = run_until_crash(1, crash_at, snapshot_cut=1)
        restored = restore(written)
        partition = PartitionDecider(restored, committed=committed)
        for offset in range(restored.checkpoint, len(LOG)):
            produced += [d.id for d in partition.apply(offset, LOG[offset])]
        assert sorted(produced) == sorted(expected_ids), crash_at
        assert partition.states == expected_states, crash_at


def test_restore_folds_records_and_tombstones():
    partition = PartitionDecider(Restored(), committed=0)
    for offset, event in enumerate(LOG[:30]):
        partition.apply(offset, event)
    records = [(k, None if r is None else encode_record(r)) for k, r in partition.snapshot(30)]
    some_key = records[0][0]

    restored = restore([*records, (some_key, None)])

    assert restored.checkpoint == 30
    assert some_key not in restored.states
    assert set(restored.states) == set(partition.states) - {some_key}


def test_events_before_the_committed_offset_rebuild_state_silently():
    partition = PartitionDecider(Restored(), committed=10)

    produced = [partition.apply(offset, event) for offset, event in enumerate(LOG[:12])]

    assert all(decisions == [] for decisions in produced[:10])
    assert partition.states  # the state was rebuilt all the same


def test_timers_of_a_silently_rebuilt_state_are_handed_over_once_it_caught_up():
    """Restarted without a snapshot, the decider rebuilds a job's state from offsets it
    decided before; the restart backoff timer scheduled there is not produced again, so
    the partition hands it over once the rebuild reaches the committed offset."""
    spec = {
        "tasks": [{"name": "w", "replicas": 2, "template": {}}],
        "policies": [{"event": "PodFailed", "action": "RestartJob"}],
    }
    script = JobScript("bo", spec).submit(annotations={"lavalog.io/restart-backoff": "5s,2,1m"})
    script.podgroup("Inqueue").pods("w", 2, "Running").pod("w", 0, "Failed", exit_code=1)
    log = [*script.events, *JobScript("other", spec).submit().events]
    decided = PartitionDecider(Restored(), committed=0)
    [timer] = [
        d for i, e in enumerate(log) for d in decided.apply(i, e) if isinstance(d, TimerScheduled)
    ]
    committed = len(script.events)  # the crash came after the failure was decided

    partition = PartitionDecider(Restored(), committed=committed)
    handed: list[list[DueTimer]] = []
    for offset, event in enumerate(log):
        assert partition.apply(offset, event) == [] or offset >= committed
        handed.append(partition.rebuilt_timers())

    due = DueTimer(timer.fire_at, "default/bo", script.uid, timer.timer_id)
    assert handed == [[]] * (committed - 1) + [[due]] + [[]] * (len(log) - committed)


class CheckpointBeforeSettled(msgspec.Struct, frozen=True, tag="checkpoint"):
    """The checkpoint as a controller that knows no settled records reads it."""

    offset: int


_read_before_settled = msgspec.json.Decoder(JobSnapshot | CheckpointBeforeSettled)


def as_read_before_settled(
    written: list[tuple[str, bytes | None]],
) -> list[tuple[str, bytes | None]]:
    """The records as an older controller sees them: what it cannot decode (a settled
    job's record) is skipped, a checkpoint is its `offset` alone."""
    seen: list[tuple[str, bytes | None]] = []
    for key, value in written:
        if value is None:
            seen.append((key, None))
            continue
        try:
            record = _read_before_settled.decode(value)
        except msgspec.DecodeError:
            continue
        if isinstance(record, CheckpointBeforeSettled):
            record = Checkpoint(offset=record.offset)
        seen.append((key, encode_record(record)))
    return seen


@pytest.mark.parametrize("snapshot_every", [1, 5, 13])
def test_a_controller_rolled_back_to_one_without_settled_records_rebuilds_them_from_the_log(
    snapshot_every: int,
) -> None:
    """It cannot read a settled job's record: it must not start after that job's facts."""
    expected_ids, expected_states = uninterrupted()
    produced, written, committed = run_until_crash(snapshot_every, len(LOG), snapshot_cut=99)
    assert any(isinstance(decode_record(v), SettledJobSnapshot) for _, v in written if v)

    restored = restore(as_read_before_settled(written))
    partition = PartitionDecider(restored, committed=committed)
    for offset in range(restored.checkpoint, len(LOG)):
        produced += [d.id for d in partition.apply(offset, LOG[offset])]

    assert sorted(produced) == sorted(expected_ids)  # nothing decided twice, nothing lost
    assert partition.states == expected_states


def test_a_checkpoint_written_before_settled_records_is_read_as_it_was():
    (restored,) = [restore([("__checkpoint__", b'{"type":"checkpoint","offset":42}')])]
    assert restored.checkpoint == 42


def test_without_settled_records_an_older_controller_replays_from_the_checkpoint():
    partition = PartitionDecider(Restored(), committed=0)
    partition.apply(0, LOG[0])
    (*_, (_, checkpoint)) = partition.snapshot(1)
    assert checkpoint == Checkpoint(offset=1, taken_at=1)
