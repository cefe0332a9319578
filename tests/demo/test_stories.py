"""The demo's stories: the README promises what `cli/demo/stories.py` says, the manifests and
faults can tell those stories, and the check tells a story that played out from one that
did not (timelines built by the real decider from scripted cluster observations)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import msgspec
import pytest
import yaml

from lavalog.cli.demo.display import JobRow
from lavalog.cli.demo.run import JOBS_DIR
from lavalog.cli.demo.stories import STORIES, Fault, OomKill, Story, check, readme_table
from lavalog.controller.decider.core import replay
from lavalog.events.codec import LogEvent
from lavalog.events.observations import ContainerEnd
from lavalog.projections.core.fold import new_history, record
from lavalog.projections.core.timeline import Timeline, build_timeline
from lavalog.simulator import commands
from tests.scenarios import JobScript

ROOT = Path(__file__).resolve().parents[2]


def story(name: str) -> Story:
    return next(s for s in STORIES if s.name == name)


def manifest(job: str) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((JOBS_DIR / f"{job}.yaml").read_text())
    return loaded


# --- what is promised -------------------------------------------------------------------


def test_the_readme_table_is_the_stories():
    readme = (ROOT / "README.md").read_text()
    assert readme_table() in readme, (
        "README.md's demo table differs from cli/demo/stories.py; it should read:\n"
        + readme_table()
    )


def test_every_manifest_is_in_exactly_one_story():
    jobs = [job for s in STORIES for job in s.jobs]
    assert sorted(jobs) == sorted(path.stem for path in JOBS_DIR.glob("*.yaml"))
    assert len(jobs) == len(set(jobs))
    assert all(manifest(job)["metadata"]["name"] == job for job in jobs)


@pytest.mark.parametrize(
    ("s", "fault"),
    [(s, fault) for s in STORIES for fault in s.faults],
    ids=lambda x: x.name if isinstance(x, Story) else type(x).__name__,
)
def test_a_fault_hits_a_pod_of_its_job_long_before_the_pod_would_end(s: Story, fault: Fault):
    (job,) = s.jobs
    tasks = {task["name"]: task for task in manifest(job)["spec"]["tasks"]}
    task_name, _, index = fault.pod.removeprefix(f"{job}-").rpartition("-")
    assert task_name in tasks and int(index) < tasks[task_name]["replicas"]
    containers = tasks[task_name]["template"]["spec"]["containers"]
    if isinstance(fault, OomKill):
        containers = [c for c in containers if c["name"] == fault.container]
        assert containers, f"{fault.pod} has no container {fault.container}"
    for container in containers:
        program = commands.parse(container.get("command"), container.get("args"))
        runs_for = sum(
            sum(float(arg) for arg in step.argv[1:]) for step in program if step.argv[0] == "sleep"
        )
        # the fault lands while the program runs even when observing the pod start lags
        # by most of the program's run time (simulated seconds)
        assert runs_for >= 5 * fault.after, f"{fault.pod} {container['name']} runs {runs_for} s"
        assert not math.isinf(runs_for)


# --- the check --------------------------------------------------------------------------


def timeline_of(script: JobScript) -> Timeline:
    """The timeline the projections build from the script and the decider's decisions."""
    events: list[LogEvent] = [e for o, ds in replay(script.events) for e in (o, *ds)]
    history = new_history(events[0])
    for event in events:
        record(history, event)
    return build_timeline(history)


def status_of(timeline: Timeline, **changes: Any) -> JobRow:
    """The Job status a controller that wrote what it decided would show."""
    row = JobRow(
        name=timeline.name, phase=timeline.phase, running=0, pending=0, succeeded=0, failed=0,
        retries=timeline.retry_count, version=timeline.version, reason=timeline.reason,
    )  # fmt: skip
    return msgspec.structs.replace(row, **changes)


def mpi_job(*, launcher_crashes: bool) -> JobScript:
    """mpi-allreduce on a cluster: the launcher exits 3 once (or never), then succeeds."""
    script = JobScript("mpi-allreduce", manifest("mpi-allreduce")["spec"]).submit()
    script.podgroup("Inqueue")
    pods = [("mpimaster", 0), ("mpiworker", 0), ("mpiworker", 1)]
    for version in range(2 if launcher_crashes else 1):
        for task, index in pods:
            script.pod(task, index, "Running", version=version)
        if version == 0 and launcher_crashes:
            script.pod("mpimaster", 0, "Failed", exit_code=3, version=version)
        else:
            script.pod("mpimaster", 0, "Succeeded", exit_code=0, version=version)
        for task, index in pods:
            script.pod_deleted(task, index, version=version)
    return script


def test_a_story_that_played_out_has_no_problems():
    timeline = timeline_of(mpi_job(launcher_crashes=True))
    mpi = story("mpi-allreduce")

    assert check(mpi, {"mpi-allreduce": timeline}, {"mpi-allreduce": status_of(timeline)}) == []


def test_a_crash_that_came_too_late_names_the_story_and_what_differs():
    timeline = timeline_of(mpi_job(launcher_crashes=False))
    mpi = story("mpi-allreduce")

    problems = check(mpi, {"mpi-allreduce": timeline}, {"mpi-allreduce": status_of(timeline)})

    # the run: completed as version 1 without any RestartJob
    assert (timeline.phase, timeline.version) == ("Completed", 1)
    assert problems == [
        "mpi-allreduce: retries 0, expected 1",
        "mpi-allreduce: version 1, expected 2",
        "mpi-allreduce: decisions ['TaskCompleted → CompleteJob'], expected"
        " ['PodFailed (exit 3) → RestartJob', 'TaskCompleted → CompleteJob']",
        "mpi-allreduce: Job status retries 0, expected 1",
        "mpi-allreduce: Job status version 1, expected 2",
    ]


def test_the_job_status_is_checked_beside_the_timeline():
    timeline = timeline_of(mpi_job(launcher_crashes=True))
    stale = status_of(timeline, phase="Completing", version=1)

    problems = check(story("mpi-allreduce"), {"mpi-allreduce": timeline}, {"mpi-allreduce": stale})

    assert problems == [
        "mpi-allreduce: Job status phase Completing, expected Completed",
        "mpi-allreduce: Job status version 1, expected 2",
    ]


def test_a_job_missing_from_the_projections_is_a_problem():
    assert check(story("flaky-train"), {}, {}) == [
        "flaky-train: no timeline",
        "flaky-train: no Job status",
    ]


def test_pods_left_running_by_a_finished_job_are_a_problem():
    script = mpi_job(launcher_crashes=True)
    del script.events[-1]  # the last worker is never seen gone
    timeline = timeline_of(script)

    problems = check(story("mpi-allreduce"), {"mpi-allreduce": timeline}, {})

    assert "mpi-allreduce: pods not ended: mpi-allreduce-mpiworker-1" in problems


def gpu_job(name: str, *, runs_at: float, ends_at: float) -> Timeline:
    script = JobScript(name, manifest(name)["spec"], start=runs_at - 10).submit()
    script.podgroup("Inqueue")
    script.at(runs_at).pods("trainer", 4, "Running")
    script.at(ends_at).pods("trainer", 4, "Succeeded")
    return timeline_of(script)


def gang_check(a: Timeline, b: Timeline) -> list[str]:
    statuses = {t.name: status_of(t) for t in (a, b)}
    return check(story("gpu-train-a, gpu-train-b"), {t.name: t for t in (a, b)}, statuses)


def test_two_gangs_that_ran_one_after_the_other_in_either_order_played_out():
    first = gpu_job("gpu-train-b", runs_at=100.0, ends_at=145.0)
    second = gpu_job("gpu-train-a", runs_at=150.0, ends_at=195.0)

    assert gang_check(second, first) == []


def test_two_gangs_that_ran_at_once_did_not():
    a = gpu_job("gpu-train-a", runs_at=100.0, ends_at=145.0)
    b = gpu_job("gpu-train-b", runs_at=120.0, ends_at=165.0)

    assert gang_check(a, b) == ["gpu-train-b's pods started 28.000s before gpu-train-a's finished"]


def backoff_job(*, backoff: bool) -> JobScript:
    """backoff-train on a cluster: the worker fails in each of its three runs; with the
    annotation the first two restarts come when their timers fire, without it at once."""
    job = manifest("backoff-train")
    annotations = job["metadata"]["annotations"] if backoff else None
    script = JobScript("backoff-train", job["spec"]).submit(annotations=annotations)
    script.podgroup("Inqueue")
    for version in range(3):
        for phase in ("Pending", "Running"):
            script.pod("ps", 0, phase, version=version).pod("worker", 0, phase, version=version)
        script.pod("worker", 0, "Failed", exit_code=1, version=version)
        failure = script.events[-1]
        if backoff and version < 2:
            script.at(failure.time + 2.0**version).timer(f"{failure.id}#timer")
        script.pod_deleted("ps", 0, version=version).pod_deleted("worker", 0, version=version)
    return script


def test_the_backoff_story_needs_each_restart_to_wait_its_turn():
    played = timeline_of(backoff_job(backoff=True))
    at_once = timeline_of(backoff_job(backoff=False))
    s = story("backoff-train")

    assert check(s, {"backoff-train": played}, {"backoff-train": status_of(played)}) == []
    problems = check(s, {"backoff-train": at_once}, {"backoff-train": status_of(at_once)})
    assert problems == [
        "backoff-train: decisions ['PodFailed (exit 1) → RestartJob', 'PodFailed (exit 1) →"
        " RestartJob', 'PodFailed (exit 1) → RestartJob'], expected ['PodFailed (exit 1) →"
        " RestartJob after 1s', 'PodFailed (exit 1) → RestartJob after 2s', 'PodFailed"
        " (exit 1) → RestartJob']"
    ]


def preempted_job(*, exit_code_set: bool) -> JobScript:
    """preempted-train on a cluster: the worker exits 143 once, then succeeds; with the
    annotation the job restarts, without it the policy's single `exitCode: 137` misses."""
    job = manifest("preempted-train")
    annotations = job["metadata"]["annotations"] if exit_code_set else None
    script = JobScript("preempted-train", job["spec"]).submit(annotations=annotations)
    script.podgroup("Inqueue")
    for version in range(2 if exit_code_set else 1):
        script.pod("ps", 0, "Running", version=version).pod("worker", 0, "Running", version=version)
        if version == 0:
            script.pod("worker", 0, "Failed", exit_code=143, version=version)
        else:
            script.pod("worker", 0, "Succeeded", exit_code=0, version=version)
        script.pod_deleted("ps", 0, version=version).pod_deleted("worker", 0, version=version)
    return script


def test_the_preempted_story_needs_the_exit_code_set():
    played = timeline_of(preempted_job(exit_code_set=True))
    missed = timeline_of(preempted_job(exit_code_set=False))
    s = story("preempted-train")

    assert check(s, {"preempted-train": played}, {"preempted-train": status_of(played)}) == []
    problems = check(s, {"preempted-train": missed}, {"preempted-train": status_of(missed)})
    assert (
        "preempted-train: decisions none, expected ['PodFailed (exit 143) → RestartJob',"
        " 'TaskCompleted → CompleteJob']"
    ) in problems
    # its pods, deleted, are made again: Pending until they run (state/running.go)
    assert "preempted-train: phase Pending, expected Completed" in problems


def sidecar_job(*, extensions: bool, podfailurepolicy_exit_code: bool = True) -> JobScript:
    """sidecar-train on a cluster: preempted in its first run, its trainer OOMKilled in the
    second (the sidecar exits 0), the third completes. Without the annotation the
    preemption counts; with Volcano's exit code (the sidecar's 0) the policy misses."""
    job = manifest("sidecar-train")
    annotations = job["metadata"]["annotations"] if extensions else None
    script = JobScript("sidecar-train", job["spec"]).submit(annotations=annotations)
    script.podgroup("Inqueue")
    preempted = "PreemptionByScheduler"
    script.pod("train", 0, "Running", version=0)
    script.pod("train", 0, "Running", version=0, deleting=True, disruption=preempted)
    script.pod_deleted("train", 0, version=0, disruption=preempted)
    script.pod("train", 0, "Running", version=1)
    last_words = "epoch 1/3\nepoch 2/3: loading shard 7\n"
    ends = (
        ContainerEnd(name="agent", exit_code=0, reason="Completed"),
        ContainerEnd(name="trainer", exit_code=137, reason="OOMKilled", message=last_words),
    )
    failed: dict[str, Any] = (
        {"exit_code": 137, "container": "trainer", "reason": "OOMKilled"}
        if podfailurepolicy_exit_code
        else {"exit_code": 0, "reason": "Completed"}  # Volcano's containerStatuses[0]
    )
    script.pod("train", 0, "Failed", version=1, containers=ends, message=last_words, **failed)
    script.pod_deleted("train", 0, version=1)
    script.pod("train", 0, "Running", version=2).pod("train", 0, "Succeeded", version=2)
    script.pod_deleted("train", 0, version=2)
    return script


def test_the_sidecar_story_needs_the_failed_containers_code_and_uncounted_disruptions():
    s = story("sidecar-train")
    played = timeline_of(sidecar_job(extensions=True))
    assert check(s, {"sidecar-train": played}, {"sidecar-train": status_of(played)}) == []

    counted = timeline_of(sidecar_job(extensions=False))
    problems = check(s, {"sidecar-train": counted}, {"sidecar-train": status_of(counted)})
    assert "sidecar-train: phase Failed, expected Completed" in problems

    volcanos = timeline_of(sidecar_job(extensions=True, podfailurepolicy_exit_code=False))
    problems = check(s, {"sidecar-train": volcanos}, {"sidecar-train": status_of(volcanos)})
    assert "sidecar-train: phase Failed, expected Completed" in problems
