"""Commit positions when decisions of one partition finish out of order."""

from __future__ import annotations

from controller.actuator.offsets import OffsetTracker


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
    assert offsets.to_commit() == {"p0": 5, "p1": 8}
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
    assert offsets.to_commit() == {"p0": 2, "p1": 1}
    assert offsets.to_commit(["p1"]) == {"p1": 1}


def test_a_forgotten_partition_ignores_late_completions() -> None:
    offsets = tracker(("p0", 3), ("p1", 3))
    offsets.forget(["p0"])
    offsets.done("p0", 3)
    assert offsets.position("p0") is None
    assert offsets.to_commit() == {"p1": 3}
    offsets.committed({"p0": 4})
    assert offsets.to_commit() == {"p1": 3}
