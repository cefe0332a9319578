"""A gang the scheduler cannot place is reported on the Job as Volcano's PodGroupPending."""

from __future__ import annotations

from msgspec.structs import replace

from events.decisions import PodGroupPending
from events.observations import PodGroupObserved
from tests.decider.support import KEY, T0, UID, given, when


def unschedulable(
    *, uid: str = "pg-uid", message: str = "3/3 tasks in gang unschedulable"
) -> PodGroupObserved:
    return PodGroupObserved(
        id="pg-1",
        key=KEY,
        job_uid=UID,
        time=T0,
        podgroup=f"job-{UID}",
        podgroup_uid=uid,
        phase="Pending",
        reason="NotEnoughResources",
        message=message,
    )


def test_the_schedulers_unschedulable_condition_becomes_a_podgroup_pending_decision():
    _, decisions = when(given("Pending", podgroup_phase="Pending"), unschedulable())
    (pending,) = [d for d in decisions if isinstance(d, PodGroupPending)]
    assert (pending.podgroup, pending.reason, pending.message) == (
        f"job-{UID}",
        "NotEnoughResources",
        "3/3 tasks in gang unschedulable",
    )


def test_a_schedulable_or_retired_podgroup_is_not_reported():
    schedulable = replace(unschedulable(), reason="", message="")
    retired = replace(
        given("Aborted", podgroup_phase="Pending"), podgroup=None, retired_podgroup_uid="old"
    )
    for state, observation in (
        (given("Pending", podgroup_phase="Pending"), schedulable),
        (retired, unschedulable(uid="old")),
    ):
        _, decisions = when(state, observation)
        assert not [d for d in decisions if isinstance(d, PodGroupPending)]
