"""A status write that changes no phase, alone in its lane, waits a moment for the write
that follows it, and so does the initiated status while the actuator is behind; bounded
from when its lane first waited, and never for another phase change or another
decision."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from lavalog.controller.actuator.core.status_hold import StatusHold
from lavalog.events.decisions import PodGroupCreate, StatusWrite
from tests.actuator.support import decision, initiated_status, status, tf_pods

JOB = {"metadata": {"namespace": "default", "name": "tf", "uid": "uid-1"}}
OTHER = {"metadata": {"namespace": "default", "name": "other", "uid": "uid-2"}}
PENDING = "Pending"


def showing(phase: str | None) -> Callable[[], str | None]:
    """The Job as the actuator holds it, in `phase` (None: not held)."""
    return lambda: phase


def pending() -> str:
    """The Job as the actuator holds it: Pending already."""
    return PENDING


def write(phase: str, running: int = 0, job: dict[str, dict[str, str]] = JOB) -> StatusWrite:
    return decision(StatusWrite, job, status=status(phase, running))


def test_a_pending_write_alone_in_its_lane_waits_for_the_next_decision() -> None:
    hold = StatusHold(1.0)
    assert hold.wait([write("Pending")], shown=pending, behind=False, now=10.0) == 1.0
    assert hold.wait([write("Pending")], shown=pending, behind=False, now=10.25) == 0.75
    assert hold.wait([write("Pending")], shown=pending, behind=False, now=11.0) == 0.0


def test_a_count_write_waits_in_whatever_phase_the_job_shows() -> None:
    """Restarting as the killed pods go, Running as pods end, Completed as the last ones
    stop: each count write waits for the next, which may bring the next phase."""
    for phase in ("Restarting", "Running", "Completed"):
        hold = StatusHold(1.0)
        assert hold.wait([write(phase, 1)], shown=showing(phase), behind=False, now=10.0) == 1.0


def test_a_phase_change_never_waits() -> None:
    """Pending again after a restart, or a Job the actuator does not hold (None: its phase
    unknown): written at once."""
    hold = StatusHold(1.0)
    for phase in ("Restarting", "Aborted", "Running", None):
        assert hold.wait([write("Pending")], shown=showing(phase), behind=True, now=10.0) == 0.0


def initiated() -> StatusWrite:
    """Volcano's `initiateJob`: Pending, no pod counted yet."""
    return decision(StatusWrite, JOB, status=initiated_status())


def test_the_initiated_status_waits_for_its_pods_counts_while_the_actuator_is_behind() -> None:
    """Every turn taken: the scheduler admits the PodGroup, then the pods' counts come
    through the log, and replace it; the counts themselves are a phase change (the Job
    shows none yet), made at once."""
    hold = StatusHold(1.0, initiated=5.0)
    assert hold.wait([initiated()], shown=no_phase, behind=True, now=10.0) == 5.0
    assert hold.wait([initiated()], shown=no_phase, behind=True, now=13.0) == 2.0
    assert hold.wait([initiated()], shown=no_phase, behind=True, now=15.0) == 0.0
    assert hold.wait([write("Pending", 0)], shown=no_phase, behind=True, now=11.0) == 0.0


def test_an_idle_actuator_writes_the_initiated_status_at_once() -> None:
    """As Volcano's `initiateJob` writes it before the PodGroup exists: a Job whose
    PodGroup waits for its queue shows Pending."""
    hold = StatusHold(1.0, initiated=5.0)
    assert hold.wait([initiated()], shown=no_phase, behind=False, now=10.0) == 0.0
    # a Job the actuator does not hold may show any phase: at once
    assert hold.wait([initiated()], shown=showing(None), behind=True, now=10.0) == 0.0


def no_phase() -> str:
    """The Job as the actuator holds it: created, no status written yet."""
    return ""


def test_nothing_waits_with_a_decision_behind_it_nor_but_a_status_write() -> None:
    hold = StatusHold(1.0)
    # the next decision came: the lane's order decides (a create first, a later write replaces)
    assert hold.wait([write("Pending"), tf_pods(JOB)], shown=pending, behind=False, now=10.0) == 0.0
    assert (
        hold.wait([write("Pending"), write("Running", 3)], shown=pending, behind=False, now=10.0)
        == 0.0
    )
    # a write of another phase, and every other decision, goes at once
    podgroup = decision(PodGroupCreate, JOB, podgroup="pg", min_member=3, queue="default")
    for alone in (write("Running", 1), write("Completed"), tf_pods(JOB), podgroup):
        assert hold.wait([alone], shown=pending, behind=False, now=10.0) == 0.0


def test_the_wait_goes_on_from_a_write_to_the_one_that_replaces_it() -> None:
    """Pods created, a pod started, another: the API's copy trails by the bound at most,
    however many writes replace one another meanwhile."""
    hold = StatusHold(1.0)
    assert hold.wait([write("Pending", 0)], shown=pending, behind=False, now=10.0) == 1.0
    assert hold.wait([write("Pending", 1)], shown=pending, behind=False, now=10.6) == pytest.approx(
        0.4
    )
    assert hold.wait([write("Pending", 2)], shown=pending, behind=False, now=11.2) == 0.0
    # another job's lane waits on its own clock
    assert hold.wait([write("Pending", job=OTHER)], shown=pending, behind=False, now=11.2) == 1.0


def test_a_write_made_starts_the_next_wait_anew() -> None:
    hold = StatusHold(1.0)
    hold.wait([write("Pending", 0)], shown=pending, behind=False, now=10.0)
    hold.written(write("Pending", 0))
    assert hold.wait([write("Pending", 1)], shown=pending, behind=False, now=12.0) == 1.0


def test_a_handover_forgets_the_waits() -> None:
    hold = StatusHold(1.0)
    hold.wait([write("Pending", 0)], shown=pending, behind=False, now=10.0)
    hold.forget()
    assert hold.wait([write("Pending", 0)], shown=pending, behind=False, now=12.0) == 1.0


def test_no_hold_and_no_negative_one() -> None:
    hold = StatusHold(0.0, initiated=0.0)
    assert hold.wait([write("Pending")], shown=pending, behind=False, now=10.0) == 0.0
    assert hold.wait([initiated()], shown=no_phase, behind=True, now=10.0) == 0.0
    for seconds, initiated_seconds in ((-1.0, 5.0), (1.0, -5.0)):
        with pytest.raises(ValueError, match="negative"):
            StatusHold(seconds, initiated=initiated_seconds)
