"""A pod observed in a phase it has already left is a late copy of an earlier fact.

Found in the chaos run: after the job completed, a `Pending` observation of a pod that
had since succeeded (the same id as its first `Pending`) reached the decider again; it
killed the pod as a leftover of a finished job, and the audit, which reads each fact
once, could not reproduce that decision.
"""

from __future__ import annotations

from functools import reduce

from msgspec.structs import replace

from controller.decider import evolve
from events.observations import PodObserved
from tests.decider.support import KEY, T0, UID, given, pod, when, worker_spec


def observed(phase: str, *, index: int = 0, at: float = T0) -> PodObserved:
    name = f"job-worker-{index}"
    return PodObserved(
        id=f"pod/{name}-uid/{phase}",
        key=KEY,
        job_uid=UID,
        time=at,
        pod=name,
        pod_uid=f"{name}-uid",
        task="worker",
        index=index,
        job_version=0,
        phase=phase,
    )


def one_pod_job() -> dict[str, object]:
    return worker_spec(minAvailable=1, task={"replicas": 1})


def test_a_late_pending_after_the_pod_succeeded_decides_nothing() -> None:
    completed = given("Completed", [pod("worker", 0, "Succeeded")], spec=one_pod_job())
    after, decisions = when(completed, observed("Pending"))
    assert decisions == []
    assert after == completed


def test_the_state_rebuilt_from_the_log_skips_it_too() -> None:
    running = given("Running", [pod("worker", 0, "Running")], spec=one_pod_job())
    log = [observed("Succeeded", at=T0 + 1), observed("Running", at=T0 + 2)]
    stepped = reduce(lambda state, o: when(state, o)[0], log, running)
    assert stepped.pods["job-worker-0"].phase == "Succeeded"
    # what projections and snapshots fold: the observations and the decisions made
    decided = when(running, log[0])
    folded = reduce(evolve, [log[0], *decided[1], log[1]], running)
    assert folded == stepped


def test_a_newer_phase_and_another_incarnation_of_the_pod_are_not_stale() -> None:
    pending = given("Running", [pod("worker", 0, "Pending")], spec=one_pod_job())
    after, _ = when(pending, observed("Running"))
    assert after.pods["job-worker-0"].phase == "Running"
    succeeded = given("Running", [pod("worker", 0, "Succeeded")], spec=one_pod_job())
    replaced = replace(observed("Pending"), pod_uid="new-uid", id="pod/new-uid/Pending")
    after, _ = when(succeeded, replaced)
    assert (after.pods["job-worker-0"].uid, after.pods["job-worker-0"].phase) == (
        "new-uid",
        "Pending",
    )
