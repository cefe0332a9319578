"""A Pending Job's status write that changes no phase, alone in its lane, waits a moment
for the write that follows it; bounded from when its lane first waited, and never for
a phase change or another decision."""

from __future__ import annotations

import functools

import pytest

from lavalog.controller.actuator.core.status_hold import StatusHold
from lavalog.events.decisions import PodGroupCreate, StatusWrite
from tests.actuator.support import decision, status, tf_pods

JOB = {"metadata": {"namespace": "default", "name": "tf", "uid": "uid-1"}}
OTHER = {"metadata": {"namespace": "default", "name": "other", "uid": "uid-2"}}
PENDING = "Pending"


def pending() -> str:
    """The Job as the actuator holds it: Pending already."""
    return PENDING


def write(phase: str, running: int = 0, job: dict[str, dict[str, str]] = JOB) -> StatusWrite:
    return decision(StatusWrite, job, status=status(phase, running))


def test_a_pending_write_alone_in_its_lane_waits_for_the_next_decision() -> None:
    hold = StatusHold(1.0)
    assert hold.wait([write("Pending")], shown=pending, now=10.0) == 1.0
    assert hold.wait([write("Pending")], shown=pending, now=10.25) == 0.75
    assert hold.wait([write("Pending")], shown=pending, now=11.0) == 0.0


def test_a_phase_change_never_waits() -> None:
    """The Job initiated (no phase yet), or Pending again after a restart: the phase is
    written at once, as Volcano's `initiateJob` writes it before the PodGroup exists."""
    hold = StatusHold(1.0)
    for phase in ("", "Restarting", "Aborted"):
        assert hold.wait([write("Pending")], shown=functools.partial(str, phase), now=10.0) == 0.0


def test_nothing_waits_with_a_decision_behind_it_nor_but_a_pending_write() -> None:
    hold = StatusHold(1.0)
    # the next decision came: the lane's order decides (a create first, a later write replaces)
    assert hold.wait([write("Pending"), tf_pods(JOB)], shown=pending, now=10.0) == 0.0
    assert hold.wait([write("Pending"), write("Running", 3)], shown=pending, now=10.0) == 0.0
    # a write of another phase, and every other decision, goes at once
    podgroup = decision(PodGroupCreate, JOB, podgroup="pg", min_member=3, queue="default")
    for alone in (write("Running", 1), write("Completed"), tf_pods(JOB), podgroup):
        assert hold.wait([alone], shown=pending, now=10.0) == 0.0


def test_the_wait_goes_on_from_a_write_to_the_one_that_replaces_it() -> None:
    """Pods created, a pod started, another: the API's copy trails by the bound at most,
    however many writes replace one another meanwhile."""
    hold = StatusHold(1.0)
    assert hold.wait([write("Pending", 0)], shown=pending, now=10.0) == 1.0
    assert hold.wait([write("Pending", 1)], shown=pending, now=10.6) == pytest.approx(0.4)
    assert hold.wait([write("Pending", 2)], shown=pending, now=11.2) == 0.0
    # another job's lane waits on its own clock
    assert hold.wait([write("Pending", job=OTHER)], shown=pending, now=11.2) == 1.0


def test_a_write_made_starts_the_next_wait_anew() -> None:
    hold = StatusHold(1.0)
    hold.wait([write("Pending", 0)], shown=pending, now=10.0)
    hold.written(write("Pending", 0))
    assert hold.wait([write("Pending", 1)], shown=pending, now=12.0) == 1.0


def test_a_handover_forgets_the_waits() -> None:
    hold = StatusHold(1.0)
    hold.wait([write("Pending", 0)], shown=pending, now=10.0)
    hold.forget()
    assert hold.wait([write("Pending", 0)], shown=pending, now=12.0) == 1.0


def test_no_hold_and_no_negative_one() -> None:
    assert StatusHold(0.0).wait([write("Pending")], shown=pending, now=10.0) == 0.0
    with pytest.raises(ValueError, match="negative"):
        StatusHold(-1.0)
