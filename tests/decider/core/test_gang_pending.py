"""A gang the scheduler cannot place is reported on the Job as Volcano's PodGroupPending."""

from __future__ import annotations

from msgspec.structs import replace

from lavalog.events.decisions import PodGroupPending
from lavalog.events.observations import AnyObservation
from tests.decider.support import PODGROUP_UID, UID, given, observed, when


def unschedulable(
    *, uid: str = PODGROUP_UID, message: str = "3/3 tasks in gang unschedulable"
) -> AnyObservation:
    return (
        observed().podgroup("Pending", reason="NotEnoughResources", message=message, uid=uid).last
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
