"""A job's lane when the actuator is behind: creates first, superseded status writes left out."""

from __future__ import annotations

import msgspec

from lavalog.controller.actuator.core.lane_order import next_up, superseded
from lavalog.events.decisions import PhaseChanged, PodGroupPending, PodsKill, StatusWrite
from tests.actuator.support import decision, status, tf_pods

JOB = {"metadata": {"namespace": "default", "name": "tf", "uid": "uid-1"}}


def write(phase: str, running: int = 0, version: int = 1) -> StatusWrite:
    written = msgspec.structs.replace(status(phase, running), version=version)
    return decision(StatusWrite, JOB, status=written)


def test_a_pod_create_goes_before_the_status_writes_and_events_ahead_of_it() -> None:
    event = decision(PhaseChanged, JOB, previous="", phase="Pending")
    assert next_up([event, write("Pending"), tf_pods(JOB, version=1), write("Pending")]) == 2


def test_a_pod_create_waits_for_a_status_write_that_makes_its_pods_stale() -> None:
    ended = write("Completed", version=1)
    later_run = write("Restarting", version=2)
    assert next_up([ended, tf_pods(JOB, version=1)]) == 0
    assert next_up([later_run, tf_pods(JOB, version=1)]) == 0


def test_a_pod_create_does_not_pass_a_pod_kill() -> None:
    kill = decision(PodsKill, JOB, reason="RestartJob", pods=())
    assert next_up([kill, tf_pods(JOB)]) == 0


def test_a_status_write_is_left_out_only_for_a_later_one_with_events_between() -> None:
    event = decision(PodGroupPending, JOB, podgroup="tf-uid-1", message="1/1 tasks in gang")
    assert superseded(write("Running"), [event, write("Running", 1)])
    assert not superseded(write("Running"), [tf_pods(JOB), write("Running", 1)])
    assert not superseded(write("Running", 1), [event])
    other_incarnation = msgspec.structs.replace(write("Running", 1), job_uid="uid-2")
    assert not superseded(write("Running"), [other_incarnation])


def test_every_phase_is_written_even_when_a_later_write_is_queued() -> None:
    """Volcano writes each phase it passes through (Aborted, Restarting, Pending on
    ResumeJob): a later write of another phase does not replace an earlier one."""
    event = decision(PhaseChanged, JOB, previous="Restarting", phase="Pending")
    assert not superseded(write("Restarting"), [event, write("Pending")])
    assert not superseded(write("Pending"), [event, write("Running", 1)])
