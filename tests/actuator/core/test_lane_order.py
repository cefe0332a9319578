"""A job's lane when the actuator is behind: creates first, superseded status writes left out.
(Events never wait in a lane: the recorder writes them.)"""

from __future__ import annotations

import msgspec

from lavalog.controller.actuator.core.lane_order import (
    next_up,
    replaced_by_last,
    replacement,
    superseded,
)
from lavalog.events.decisions import PluginResourcesEnsure, PodGroupCreate, PodsKill, StatusWrite
from tests.actuator.support import decision, status, tf_pods

JOB = {"metadata": {"namespace": "default", "name": "tf", "uid": "uid-1"}}


def write(phase: str, running: int = 0, version: int = 1) -> StatusWrite:
    written = msgspec.structs.replace(status(phase, running), version=version)
    return decision(StatusWrite, JOB, status=written)


PODGROUP = decision(PodGroupCreate, JOB, podgroup="pg", min_member=1, queue="default")


def test_a_create_goes_before_the_status_writes_ahead_of_it() -> None:
    assert next_up([write("Pending"), write("Pending"), tf_pods(JOB, version=1)]) == 2
    assert next_up([write("Pending"), PODGROUP, write("Pending")]) == 1


def test_a_pod_create_waits_for_a_status_write_that_makes_its_pods_stale() -> None:
    ended = write("Completed", version=1)
    later_run = write("Restarting", version=2)
    assert next_up([ended, tf_pods(JOB, version=1)]) == 0
    assert next_up([later_run, tf_pods(JOB, version=1)]) == 0


def test_a_status_write_is_not_left_out_across_a_plugin_objects_ensure() -> None:
    """The ensure reads the phase (none is made for a run that is over), so the phase
    ahead of it is written first."""
    ensure = decision(PluginResourcesEnsure, JOB, plugins={"svc": []}, task_replicas={"w": 1})
    restarting = write("Restarting", version=2)
    assert not superseded(restarting, [ensure, write("Restarting", version=2)])
    assert superseded(restarting, [PODGROUP, write("Restarting", version=2)])


def test_a_pod_create_does_not_pass_a_pod_kill() -> None:
    kill = decision(PodsKill, JOB, reason="RestartJob", pods=())
    assert next_up([kill, tf_pods(JOB)]) == 0


def test_a_status_write_is_left_out_for_a_later_one_with_nothing_between_that_reads_it() -> None:
    assert superseded(write("Running"), [write("Running", 1)])
    assert superseded(write("Running"), [PODGROUP, write("Running", 1)])
    # a pod create reads the status; a kill must follow the status before it
    assert not superseded(write("Running"), [tf_pods(JOB), write("Running", 1)])
    kill = decision(PodsKill, JOB, reason="RestartJob", pods=())
    assert not superseded(write("Running", version=2), [kill, write("Running", 1, version=2)])
    assert not superseded(write("Running", 1), [PODGROUP])


def test_every_phase_is_written_even_when_a_later_write_is_queued() -> None:
    """Volcano writes each phase it passes through (Aborted, Restarting, Pending on
    ResumeJob): a later write of another phase does not replace an earlier one."""
    assert not superseded(write("Restarting"), [write("Pending")])
    assert not superseded(write("Pending"), [PODGROUP, write("Running", 1)])
    other_incarnation = msgspec.structs.replace(write("Running", 1), job_uid="uid-2")
    assert not superseded(write("Pending"), [other_incarnation])


def test_a_write_of_the_phase_shown_already_is_left_out_for_the_next_whatever_its_phase() -> None:
    """A Pending Job's pods' counts, then its Running status: the Job shows Pending
    already, so writing only the Running status leaves no phase out."""
    assert superseded(write("Pending"), [write("Running", 1)], shown="Pending")
    assert superseded(write("Pending"), [PODGROUP, write("Running", 1)], shown="Pending")
    # the phase the write brings is not shown yet: it is made
    assert not superseded(write("Pending"), [write("Running", 1)], shown="")
    assert not superseded(write("Pending"), [write("Running", 1)], shown="Restarting")
    # what reads the status between, or another incarnation, still stops it
    assert not superseded(write("Pending"), [tf_pods(JOB), write("Running", 1)], shown="Pending")
    other_incarnation = msgspec.structs.replace(write("Running", 1), job_uid="uid-2")
    assert not superseded(write("Pending"), [other_incarnation], shown="Pending")


def test_the_write_in_a_shown_phases_place_may_be_of_the_next_phase_and_then_of_that_one() -> None:
    later = [write("Pending", 1), write("Running", 2), write("Running", 3), write("Completing")]
    assert replacement(write("Pending"), later, shown="Pending") == 2
    assert replacement(write("Pending"), later, shown="") == 0
    # a write of the phase shown after one of another phase is that phase's own: kept
    again = [write("Restarting"), write("Pending", 1), write("Running", 2)]
    assert replacement(write("Running"), again, shown="Running") == 0


def test_the_write_that_goes_in_a_status_writes_place_is_the_last_of_its_phase_in_reach() -> None:
    later = [
        write("Running", 1),
        PODGROUP,
        write("Running", 2),
        write("Pending"),
        write("Running", 3),
    ]
    assert replacement(write("Running"), later) == 2
    # a pod create between stops the chain: the write before it is made
    assert (
        replacement(write("Running"), [write("Running", 1), tf_pods(JOB), write("Running", 2)]) == 0
    )
    assert replacement(write("Running"), [write("Pending")]) is None
    assert replacement(tf_pods(JOB), [write("Running", 1)]) is None


def test_the_write_just_queued_names_the_one_it_supersedes() -> None:
    """Left out as the later write is queued: the earlier of its phase, across what reads
    no status, and nothing across a pod create or kill, or of another phase."""
    assert replaced_by_last([write("Running"), write("Running", 1)]) == 0
    assert replaced_by_last([PODGROUP, write("Running"), PODGROUP, write("Running", 1)]) == 1
    assert replaced_by_last([write("Running"), tf_pods(JOB), write("Running", 1)]) is None
    assert replaced_by_last([write("Pending"), write("Running", 1)]) is None
    assert replaced_by_last([write("Running"), PODGROUP]) is None
    assert replaced_by_last([write("Running")]) is None
