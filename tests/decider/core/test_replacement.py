"""A finished pod restarted in one trip (PodsReplace): decided where Volcano's flow would
create the pod again after its deletion, and nowhere else."""

from __future__ import annotations

from lavalog.controller.decider.core import JobState, replay
from lavalog.events.decisions import AnyDecision, PhaseChanged, PodsCreate, PodsReplace
from tests.decider.core.test_scenarios import job, running, task
from tests.decider.support import created, killed, replaced
from tests.scenarios import JobScript

RESTART_POD = [{"event": "PodFailed", "action": "RestartPod"}]
RESTART_TASK = [{"event": "PodFailed", "action": "RestartTask"}]


class Decided:
    """A script decided as it grows: `new()` gives the decisions of the events added since."""

    def __init__(self, script: JobScript) -> None:
        self.script = script
        self.states: dict[str, JobState] = {}
        self._done = 0

    def new(self) -> list[AnyDecision]:
        events = self.script.events[self._done :]
        self._done = len(self.script.events)
        return [d for _, ds in replay(events, self.states) for d in ds]

    @property
    def state(self) -> JobState:
        return self.states[self.script.key]


def running_job(name: str, spec: dict[str, object], replicas: int) -> Decided:
    script = JobScript(name, spec).submit().podgroup("Inqueue")
    decided = Decided(running(script, "worker", replicas))
    decided.new()
    return decided


def test_a_failed_pod_is_replaced_in_one_decision_and_its_deletion_makes_nothing():
    job_ = running_job("rp", job(task("worker", 3, policies=RESTART_POD)), 3)

    job_.script.pod("worker", 2, "Failed", exit_code=137)
    at_failure = job_.new()
    [replace] = [d for d in at_failure if isinstance(d, PodsReplace)]
    assert (replace.reason, replace.job_version) == ("RestartPod", 0)
    assert replace.podgroup == job_.state.podgroup.name  # type: ignore[union-attr]
    assert [(ref.name, ref.uid) for ref in replace.pods] == [("rp-worker-2", "rp-worker-2-uid0")]
    assert killed(at_failure) == []

    job_.script.pod_deleted("worker", 2, phase="Failed")
    at_deletion = job_.new()
    assert created(at_deletion) == [] and replaced(at_deletion) == []
    record = job_.state.pods["rp-worker-2"]
    assert (record.uid, record.version, record.deleting) == ("", 0, False)  # asked for, not seen

    running(job_.script, "worker", 3)
    job_.new()
    assert (job_.state.phase, job_.state.retry_count, job_.state.version) == ("Running", 1, 0)
    assert job_.state.pods["rp-worker-2"].uid == "rp-worker-2-uid1"


def test_a_restarted_task_replaces_its_finished_pods_and_kills_its_running_ones():
    """minAvailable 1: the job is Pending again before the running pod is gone, so the
    failed one comes back at once; the running one waits out its grace period and is
    made again after its deletion, as in Volcano."""
    job_ = running_job("rt", job(task("worker", 2, policies=RESTART_TASK), minAvailable=1), 2)

    job_.script.pod("worker", 0, "Failed", exit_code=1)
    at_failure = job_.new()
    assert (replaced(at_failure), killed(at_failure)) == (["rt-worker-0"], ["rt-worker-1"])

    job_.script.pod_deleted("worker", 0, phase="Failed").pod_deleted("worker", 1)
    assert created(job_.new()) == ["rt-worker-1"]


def test_a_pod_waits_for_its_task_when_the_gang_needs_every_pod_gone():
    """minAvailable 2: Volcano stays Restarting until both pods are gone, so the failed pod
    is killed, not replaced, and both are made after the last deletion."""
    job_ = running_job("gang", job(task("worker", 2, policies=RESTART_TASK), minAvailable=2), 2)

    job_.script.pod("worker", 0, "Failed", exit_code=1)
    at_failure = job_.new()
    assert (replaced(at_failure), killed(at_failure)) == ([], ["gang-worker-0", "gang-worker-1"])

    job_.script.pod_deleted("worker", 0, phase="Failed")
    assert created(job_.new()) == []
    job_.script.pod_deleted("worker", 1)
    assert created(job_.new()) == ["gang-worker-0", "gang-worker-1"]


def test_no_replacement_when_the_restart_exhausts_the_retries():
    job_ = running_job("last", job(task("worker", 2, policies=RESTART_POD), maxRetry=1), 2)

    job_.script.pod("worker", 1, "Failed", exit_code=1)
    at_failure = job_.new()

    assert replaced(at_failure) == [] and "last-worker-1" in killed(at_failure)
    assert [d.phase for d in at_failure if isinstance(d, PhaseChanged)][-1] == "Failed"


def test_a_replacement_overtaken_by_a_new_job_version_is_dropped():
    """A RestartJob (a new job version) between the replacement and the deletion: the
    actuator makes no pod of the old version then, so the state does not wait for it, and
    the new version's sync makes the pod. (minAvailable 1: the job is Running at once.)"""
    spec = job(task("worker", 2, policies=RESTART_POD), maxRetry=5, minAvailable=1)
    job_ = running_job("over", spec, 2)
    job_.script.pod("worker", 1, "Failed", exit_code=1)
    assert replaced(job_.new()) == ["over-worker-1"]
    assert job_.state.phase == "Running"
    job_.script.command("RestartJob")
    job_.new()
    assert job_.state.version == 1

    job_.script.pod_deleted("worker", 1, phase="Failed")
    creates = [d for d in job_.new() if isinstance(d, PodsCreate)]

    assert [(d.job_version, [ref.name for ref in d.pods]) for d in creates] == [
        (1, ["over-worker-1"])
    ]


def test_a_relist_that_lacks_the_replaced_pod_counts_as_its_deletion():
    job_ = running_job("relist", job(task("worker", 2, policies=RESTART_POD)), 2)
    job_.script.pod("worker", 1, "Failed", exit_code=1)
    job_.new()

    job_.script.listed(("worker", 0))
    assert created(job_.new()) == []
    record = job_.state.pods["relist-worker-1"]
    assert (record.uid, record.version) == ("", 0)


def worker_replaced_once(name: str) -> Decided:
    """A running ps and worker (RestartTask, maxRetry 2) whose worker failed once and was
    replaced; the replacement not seen yet."""
    spec = job(task("ps", 1), task("worker", 1, policies=RESTART_TASK), maxRetry=2)
    script = JobScript(name, spec).submit().podgroup("Inqueue")
    running(script, "ps", 1)
    job_ = Decided(running(script, "worker", 1))
    job_.new()
    job_.script.pod("worker", 0, "Failed", exit_code=1)
    assert replaced(job_.new()) == [f"{name}-worker-0"]
    return job_


def test_a_replacement_seen_before_the_deletion_it_followed_counts_the_deletion_first():
    """The decider down while the replacement ran and failed (the chaos and crash tests): a
    relist shows the new pod Failed and never the old one's deletion. The deletion's sync
    comes first (Restarting -> Pending, on the pods as the deletion left them: the new pod
    asked for), so the failure is the job's second and exhausts its retries (Pending ->
    Restarting -> Failed, as Volcano's pending.go restarts a task), as without the outage;
    it is not taken for a restart of the first (in Restarting, which counts no retry) and
    replaced once more. The new pod's Running was never seen, so the job is not written
    Running in between."""
    job_ = worker_replaced_once("unseen")

    job_.script.new_incarnation("worker", 0).pod("worker", 0, "Failed", exit_code=1)
    decisions = job_.new()

    assert replaced(decisions) == []
    assert [d.phase for d in decisions if isinstance(d, PhaseChanged)] == [
        "Pending",
        "Restarting",
        "Failed",
    ]
    assert (job_.state.phase, job_.state.retry_count) == ("Failed", 2)


def test_a_replacement_seen_failed_after_its_job_finished_the_other_pods_still_counts_a_retry():
    """As above, and the ps succeeded too while the decider was down: the relist shows the
    ps Succeeded, then the new worker Failed. The deletion's sync sees the pods as the
    deletion left them (the new worker asked for, its failure not yet seen), so the job is
    Pending when the failure comes, and the failure restarts the task once more and
    exhausts the retries (Failed, retryCount 2), as without the outage; it is not counted
    in a sync that finishes the job first (every pod done: Failed, retryCount 1)."""
    job_ = worker_replaced_once("gone")

    job_.script.pod("ps", 0, "Succeeded")
    job_.new()
    job_.script.new_incarnation("worker", 0).pod("worker", 0, "Failed", exit_code=1)
    decisions = job_.new()

    assert [d.phase for d in decisions if isinstance(d, PhaseChanged)] == [
        "Pending",
        "Restarting",
        "Failed",
    ]
    assert (job_.state.phase, job_.state.retry_count) == ("Failed", 2)
