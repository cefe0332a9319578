"""Commit positions when decisions of one partition finish out of order."""

from __future__ import annotations

from lavalog.controller.actuator.core.offsets import OffsetTracker, Progress


def tracker(*received: tuple[str, int]) -> OffsetTracker[str]:
    found: OffsetTracker[str] = OffsetTracker()
    for partition, offset in received:
        found.received(partition, offset)
    return found


def test_nothing_to_commit_before_any_message() -> None:
    offsets: OffsetTracker[str] = OffsetTracker()
    assert offsets.position("p0") is None
    assert offsets.to_commit() == {}


def test_the_position_stops_at_the_first_offset_not_done() -> None:
    offsets = tracker(("p0", 10), ("p0", 11), ("p0", 12), ("p0", 13))
    assert offsets.position("p0") == 10
    offsets.done("p0", 12)
    offsets.done("p0", 11)
    assert offsets.position("p0") == 10  # 10 (another job's) is still running
    offsets.done("p0", 10)
    assert offsets.position("p0") == 13
    offsets.done("p0", 13)
    assert offsets.position("p0") == 14  # all done: one past the last received
    assert offsets.in_flight() == 0


def test_partitions_are_independent() -> None:
    offsets = tracker(("p0", 5), ("p1", 7), ("p0", 6))
    offsets.done("p0", 6)
    offsets.done("p1", 7)
    assert offsets.to_commit() == {"p0": Progress(5, (6,)), "p1": Progress(8)}
    assert offsets.in_flight() == 1


def test_only_moved_positions_are_committed_again() -> None:
    offsets = tracker(("p0", 0), ("p1", 0))
    offsets.done("p0", 0)
    offsets.committed(offsets.to_commit())
    assert offsets.to_commit() == {}
    offsets.received("p0", 1)
    assert offsets.to_commit() == {}  # received is not done: still 1
    offsets.done("p0", 1)
    offsets.done("p1", 0)
    assert offsets.to_commit() == {"p0": Progress(2), "p1": Progress(1)}
    assert offsets.to_commit(["p1"]) == {"p1": Progress(1)}


def test_a_forgotten_partition_ignores_late_completions() -> None:
    offsets = tracker(("p0", 3), ("p1", 3))
    offsets.forget(["p0"])
    offsets.done("p0", 3)
    assert offsets.position("p0") is None
    assert offsets.to_commit() == {"p1": Progress(3)}
    offsets.committed({"p0": Progress(4)})
    assert offsets.to_commit() == {"p1": Progress(3)}


def test_progress_behind_a_slow_decision_is_committed_with_what_is_done_after_it() -> None:
    offsets = tracker(*(("p0", n) for n in range(10, 20)))
    for n in (11, 12, 13, 15, 19):  # other jobs' lanes go on; 10 (one job's) is slow
        offsets.done("p0", n)
    [progress] = offsets.to_commit().values()
    assert progress == Progress(10, (11, 12, 13, 15, 19))
    assert progress.encode() == b"10 done:1-3,5,9"
    assert Progress.decode(progress.encode()) == progress


def test_a_resumed_partition_skips_what_its_last_owner_had_carried_out() -> None:
    offsets: OffsetTracker[str] = OffsetTracker()
    offsets.resume("p0", Progress(10, (11, 12, 13, 15)))
    carried_out = [n for n in range(10, 17) if offsets.received("p0", n)]
    assert carried_out == [10, 14, 16]  # only what was in flight at the crash, and after
    assert offsets.in_flight() == 3
    offsets.done("p0", 10)
    assert offsets.position("p0") == 14


def test_a_resumed_partition_keeps_its_progress_until_the_skipped_messages_arrive() -> None:
    offsets: OffsetTracker[str] = OffsetTracker()
    offsets.resume("p0", Progress(10, (12,)))
    assert offsets.to_commit() == {}  # a crash now still knows 12 is done
    offsets.received("p0", 10)
    offsets.done("p0", 10)
    assert offsets.to_commit() == {"p0": Progress(11, (12,))}


def test_a_record_not_written_as_progress_means_nothing() -> None:
    assert Progress.decode(Progress(5).encode()) == Progress(5)
    for garbage in (b"", b"5", b"5 written by another tool", b"x done:1", b"5 done:x", b"\xff"):
        assert Progress.decode(garbage) is None


def test_the_expected_offset_is_the_one_after_the_last_received_or_the_resumed_position() -> None:
    tracker: OffsetTracker[str] = OffsetTracker()
    assert tracker.expected("p0") is None
    tracker.received("p0", 4)
    assert tracker.expected("p0") == 5
    tracker.resume("p1", Progress(10, (12,)))
    assert tracker.expected("p1") == 10


def test_an_offset_fetched_past_the_expected_one_names_where_to_fetch_from() -> None:
    """Found in the chaos run: a member resumed a partition at its commit (1315) and was
    handed 1507 first; tracking from there, it would have committed past 1315-1506."""
    tracker: OffsetTracker[str] = OffsetTracker()
    tracker.resume("p0", Progress(1315, (1320,)))
    assert tracker.missing_before("p0", 1507) == 1315
    assert tracker.missing_before("p0", 1315) is None
    assert tracker.missing_before("p1", 99) is None  # nothing expected yet


def test_an_offset_handed_out_again_is_not_carried_out_twice() -> None:
    tracker: OffsetTracker[str] = OffsetTracker()
    tracker.resume("p0", Progress(10))
    assert not tracker.received("p0", 7)  # before the position resumed from: done
    assert tracker.received("p0", 10)
    assert not tracker.received("p0", 10)  # fetched again while its lane runs
    assert tracker.position("p0") == 10
    tracker.done("p0", 10)
    assert tracker.position("p0") == 11
