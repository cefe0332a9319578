"""A gang the scheduler cannot place is reported on the Job as Volcano's PodGroupPending."""

from __future__ import annotations

from msgspec.structs import replace

from lavalog.controller.decider.core import JobState
from lavalog.events.decisions import PodGroupPending
from lavalog.events.observations import AnyObservation, PodGroupCondition
from tests.decider.support import PODGROUP_UID, T0, UID, given, observed, when


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


def conditions_seen(*conditions: PodGroupCondition, phase: str = "Inqueue") -> AnyObservation:
    """The PodGroup as the watchers publish it: its conditions, and the Unschedulable=True
    one's reason and message in `reason`/`message`."""
    waits = [c for c in conditions if c.type == "Unschedulable" and c.status == "True"]
    return (
        observed()
        .podgroup(
            phase,
            uid=PODGROUP_UID,
            conditions=conditions,
            reason=waits[0].reason if waits else "",
            message=waits[0].message if waits else "",
        )
        .last
    )


def condition(kind: str, at: float | None, message: str = "") -> PodGroupCondition:
    return PodGroupCondition(
        type=kind,
        status="True",
        reason="NotEnoughResources" if kind == "Unschedulable" else "tasks in gang are ready",
        message=message,
        last_transition_time=at,
    )


def reported(state: JobState, observation: AnyObservation) -> list[PodGroupPending]:
    return [d for d in when(state, observation)[1] if isinstance(d, PodGroupPending)]


def test_a_gang_scheduled_after_it_waited_is_not_reported():
    """vc-scheduler leaves Unschedulable=True in place when it adds Scheduled=True: the
    newest True condition (by lastTransitionTime) decides, as in recordPodGroupEvent."""
    waited = condition("Unschedulable", T0, "3/3 tasks in gang unschedulable")
    scheduled = condition("Scheduled", T0 + 5)

    assert (
        reported(given("Pending", podgroup_phase="Pending"), conditions_seen(waited, scheduled))
        == []
    )
    assert reported(given("Running"), conditions_seen(scheduled, waited, phase="Running")) == []


def test_a_gang_that_cannot_be_placed_again_is_reported():
    scheduled = condition("Scheduled", T0)
    waits = condition("Unschedulable", T0 + 60, "1/3 tasks in gang unschedulable")

    (pending,) = reported(given("Running"), conditions_seen(scheduled, waits, phase="Running"))

    assert (pending.condition, pending.reason, pending.message) == (
        "Unschedulable",
        "NotEnoughResources",
        "1/3 tasks in gang unschedulable",
    )


def test_of_conditions_written_at_the_same_time_the_first_counts():
    waits = condition("Unschedulable", T0, "3/3 tasks in gang unschedulable")
    scheduled = condition("Scheduled", T0)
    untimed = condition("Scheduled", None)
    state = given("Pending", podgroup_phase="Pending")

    assert len(reported(state, conditions_seen(waits, scheduled))) == 1
    assert reported(state, conditions_seen(scheduled, waits)) == []
    assert len(reported(state, conditions_seen(untimed, waits))) == 1


def test_false_conditions_and_phases_that_do_not_sync_are_not_reported():
    waits = condition("Unschedulable", T0, "3/3 tasks in gang unschedulable")
    no_longer = replace(condition("Unschedulable", T0 + 9), status="False")

    assert reported(given("Pending", podgroup_phase="Pending"), conditions_seen(no_longer)) == []
    assert reported(given("Aborting"), conditions_seen(waits)) == []
