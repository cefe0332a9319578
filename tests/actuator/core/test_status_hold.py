"""A Pending Job's status write alone in its lane waits a moment for the write that
follows it; bounded from when its lane first waited, and never for other decisions."""

from __future__ import annotations

import pytest

from lavalog.controller.actuator.core.status_hold import StatusHold
from lavalog.events.decisions import PodGroupCreate, StatusWrite
from tests.actuator.support import decision, status, tf_pods

JOB = {"metadata": {"namespace": "default", "name": "tf", "uid": "uid-1"}}
OTHER = {"metadata": {"namespace": "default", "name": "other", "uid": "uid-2"}}


def write(phase: str, running: int = 0, job: dict[str, dict[str, str]] = JOB) -> StatusWrite:
    return decision(StatusWrite, job, status=status(phase, running))


def test_a_pending_write_alone_in_its_lane_waits_for_the_next_decision() -> None:
    hold = StatusHold(1.0)
    assert hold.wait([write("Pending")], now=10.0) == 1.0
    assert hold.wait([write("Pending")], now=10.25) == 0.75
    assert hold.wait([write("Pending")], now=11.0) == 0.0


def test_nothing_waits_with_a_decision_behind_it_nor_but_a_pending_write() -> None:
    hold = StatusHold(1.0)
    # the next decision came: the lane's order decides (a create first, a later write replaces)
    assert hold.wait([write("Pending"), tf_pods(JOB)], now=10.0) == 0.0
    assert hold.wait([write("Pending"), write("Running", 3)], now=10.0) == 0.0
    # a write of another phase, and every other decision, goes at once
    for alone in (write("Running", 1), write("Completed"), tf_pods(JOB)):
        assert hold.wait([alone], now=10.0) == 0.0
    podgroup = decision(PodGroupCreate, JOB, podgroup="pg", min_member=3, queue="default")
    assert hold.wait([podgroup], now=10.0) == 0.0


def test_the_wait_goes_on_from_a_write_to_the_one_that_replaces_it() -> None:
    """Initiated, pods created, a pod started: the API's copy trails by the bound at most,
    however many writes replace one another meanwhile."""
    hold = StatusHold(1.0)
    assert hold.wait([write("Pending", 0)], now=10.0) == 1.0
    assert hold.wait([write("Pending", 1)], now=10.6) == pytest.approx(0.4)
    assert hold.wait([write("Pending", 2)], now=11.2) == 0.0
    # another job's lane waits on its own clock
    assert hold.wait([write("Pending", job=OTHER)], now=11.2) == 1.0


def test_a_write_made_starts_the_next_wait_anew() -> None:
    hold = StatusHold(1.0)
    hold.wait([write("Pending", 0)], now=10.0)
    hold.written(write("Pending", 0))
    assert hold.wait([write("Pending", 1)], now=12.0) == 1.0


def test_a_create_refused_ends_the_wait_until_the_next_write_is_made() -> None:
    """A full quota: the Job's status goes out beside the FailedCreate Warning."""
    hold = StatusHold(1.0)
    assert hold.wait([write("Pending", 0)], now=10.0) == 1.0
    hold.refused("default/tf")
    assert hold.wait([write("Pending", 0)], now=10.1) == 0.0
    assert hold.wait([write("Pending", job=OTHER)], now=10.1) == 1.0
    hold.written(write("Pending", 0))
    assert hold.wait([write("Pending", 1)], now=12.0) == 1.0


def test_a_handover_forgets_the_waits() -> None:
    hold = StatusHold(1.0)
    hold.wait([write("Pending", 0)], now=10.0)
    hold.forget()
    assert hold.wait([write("Pending", 0)], now=12.0) == 1.0


def test_no_hold_and_no_negative_one() -> None:
    assert StatusHold(0.0).wait([write("Pending")], now=10.0) == 0.0
    with pytest.raises(ValueError, match="negative"):
        StatusHold(-1.0)
