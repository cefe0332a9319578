"""A PodGroup deleted under a job that syncs is made again, as Volcano's job controller
makes a missing PodGroup on every sync (`createOrUpdatePodGroup`)."""

from __future__ import annotations

import pytest
from msgspec.structs import replace

from lavalog.events.decisions import PodGroupCreate, PodGroupDelete, PodsCreate
from tests.decider.support import PODGROUP_UID, UID, command, given, nudge, pod, when


def test_a_running_jobs_podgroup_deleted_is_made_again_under_the_same_name() -> None:
    running = given("Running", [pod("worker", 0, phase="Running")])
    gone = replace(nudge(), id="podgroup/pg-uid/deleted", phase="", deleted=True)
    after, decisions = when(running, gone)
    [create] = [d for d in decisions if isinstance(d, PodGroupCreate)]
    assert running.spec is not None
    assert (create.podgroup, create.min_member) == (f"job-{UID}", running.spec.min_available)
    assert after.phase == "Running"
    assert not [d for d in decisions if isinstance(d, PodsCreate)]  # until admitted again


def test_a_podgroup_retired_by_the_decider_is_not_made_again() -> None:
    aborted = replace(given("Aborted"), podgroup=None, retired_podgroup_uid="pg-uid")
    gone = replace(nudge(), id="podgroup/pg-uid/deleted", phase="", deleted=True)
    _, decisions = when(aborted, gone)
    assert not [d for d in decisions if isinstance(d, PodGroupCreate)]


@pytest.mark.parametrize("phase", ["Completed", "Failed", "Terminated", "Aborted"])
def test_a_podgroup_made_again_after_the_run_ended_is_deleted_again(phase: str) -> None:
    """The actuator, restarted, carried out again a PodGroup create it had not recorded as
    done, after the run's end had deleted the PodGroup: the job's next sync deletes the
    new one, which would hold a share of its queue for good."""
    ended = replace(given(phase), podgroup=None, retired_podgroup_uid="pg-uid")
    again = replace(nudge(phase="Pending"), id="podgroup/pg-uid2", podgroup_uid="pg-uid2")
    after, decisions = when(ended, again)
    [delete] = [d for d in decisions if isinstance(d, PodGroupDelete)]
    assert (delete.podgroup, delete.podgroup_uid) == (f"job-{UID}", "pg-uid2")
    assert after.podgroup is None and after.phase == phase
    assert not [d for d in decisions if isinstance(d, PodGroupCreate | PodsCreate)]


def test_the_podgroup_a_run_ends_with_is_deleted_by_its_uid() -> None:
    """A resumed job makes its PodGroup anew under the same name: the delete of the run
    before, carried out again after a crash, must not take the new one (the actuator
    sends the uid as the delete's precondition)."""
    _, decisions = when(given("Running"), command("AbortJob"))  # no pod: Aborted at once
    [delete] = [d for d in decisions if isinstance(d, PodGroupDelete)]
    assert (delete.podgroup, delete.podgroup_uid) == (f"job-{UID}", PODGROUP_UID)
