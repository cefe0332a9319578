"""The Jobs the actuator holds: the newest version of each, only the latest finished ones."""

from __future__ import annotations

from typing import Any

from lavalog.controller.actuator.core.held_jobs import HeldJobs


def job(
    version: str, *, uid: str = "u1", phase: str = "Pending", name: str = "a"
) -> dict[str, Any]:
    return {
        "metadata": {"namespace": "ns", "name": name, "uid": uid, "resourceVersion": version},
        "status": {"state": {"phase": phase}},
    }


def test_a_watched_change_older_than_the_written_job_does_not_replace_it() -> None:
    held = HeldJobs(10)
    held.hold(job("12"))  # the answer to a status write
    held.hold(job("9"))  # the watch delivers an earlier write afterwards
    assert held.get("ns/a", "u1") == job("12")
    held.hold(job("13", phase="Running"))
    assert held.get("ns/a", "u1") == job("13", phase="Running")


def test_a_version_that_is_no_number_is_taken_as_newer() -> None:
    held = HeldJobs(10)
    held.hold(job("12"))
    held.hold(job("etcd-less"))
    assert held.get("ns/a", "u1") == job("etcd-less")


def test_another_incarnation_is_not_given_for_the_uid_asked() -> None:
    held = HeldJobs(10)
    held.hold(job("5", uid="u2"))
    assert held.get("ns/a", "u1") is None
    held.drop("ns/a", "u1")  # the old incarnation's deletion leaves the new one held
    assert held.get("ns/a", "u2") is not None
    held.drop("ns/a", "u2")
    assert len(held) == 0


def test_only_the_latest_finished_jobs_are_held_so_memory_stays_flat_as_jobs_finish() -> None:
    held = HeldJobs(10, finished=2)
    for n in range(5):
        held.hold(job("3", name=f"j{n}", phase="Running"))
    for n, phase in enumerate(("Completed", "Failed", "Terminated")):
        held.hold(job("4", name=f"j{n}", phase=phase))
    held.hold(job("4", name="j3", phase="Aborted"))  # may be resumed: kept
    assert len(held) == 2 + 2
    assert held.get("ns/j3", "u1") == job("4", name="j3", phase="Aborted")
    # a finished Job's status is written again as its pods end: it is still held
    assert held.get("ns/j2", "u1") == job("4", name="j2", phase="Terminated")
    assert held.get("ns/j0", "u1") is None  # the least recently finished let go
    held.hold(job("5", name="j1", phase="Failed"))
    assert held.get("ns/j1", "u1") == job("5", name="j1", phase="Failed")
    held.drop("ns/j1", "u1")
    assert held.get("ns/j1", "u1") is None


def test_at_most_size_jobs_the_least_recently_used_let_go() -> None:
    held = HeldJobs(2)
    for name in "abc":
        held.hold(job("1", name=name))
    assert held.get("ns/a", "u1") is None and len(held) == 2


def test_an_incarnation_deleted_listed_out_or_found_missing_stays_gone() -> None:
    held = HeldJobs(10, gone=2)
    held.hold(job("1", uid="watched"))
    held.hold(job("1", uid="listed-out", name="b"))
    held.deleted("ns/a", "watched")  # the watch saw it deleted
    held.keep_only({"ns/a"})  # a list without ns/b
    assert held.is_gone("watched") and held.is_gone("listed-out")
    assert len(held) == 0
    held.clear()  # a handover lets go of the Jobs held, not of what is gone
    assert held.is_gone("watched")
    held.gone("read-missing")  # a read found no Job, or another incarnation
    assert held.is_gone("read-missing") and not held.is_gone("watched")  # at most `gone`
    held.gone("")
    assert not held.is_gone("")
