"""The demo's stories: what each example job shows, the fault it needs, how it must end.

The one place for what `lavalog demo` promises: the demo submits the jobs named here
and injects their faults, the README's demo table is rendered from here (a test keeps
the two equal), and `lavalog demo --once` checks every job's timeline and status
against the ending written here, naming each story that did not play out.
"""

from __future__ import annotations

from collections.abc import Mapping
from itertools import pairwise

import msgspec

from lavalog.cli.demo.display import JobRow
from lavalog.events.durations import format_duration
from lavalog.projections.core.timeline import AttemptView, Timeline


class Crash(msgspec.Struct, frozen=True, kw_only=True):
    """A story's fault: `pod`'s containers exit with `exit_code`, once, `after` simulated
    seconds into the pod's first run. The pod's own program runs far longer than
    `after`, so the crash lands while it runs whatever the time scale."""

    pod: str
    exit_code: int
    after: float = 5.0


class Decided(msgspec.Struct, frozen=True):
    """An action the controller must decide on `trigger` (from a pod that exited with
    `exit_code`, when one is given), after a timer of `waited` seconds when one is given
    (a restart backoff)."""

    action: str
    trigger: str
    exit_code: int | None = None
    waited: float | None = None

    def __str__(self) -> str:
        code = f" (exit {self.exit_code})" if self.exit_code is not None else ""
        wait = f" after {format_duration(self.waited)}" if self.waited is not None else ""
        return f"{self.trigger}{code} → {self.action}{wait}"


class Ending(msgspec.Struct, frozen=True, kw_only=True):
    """How a job ends: its phase (and the reason, when it matters), its retry count and
    version, and exactly the actions decided on the way, in order."""

    phase: str
    reason: str = ""
    retries: int = 0
    version: int = 0
    decisions: tuple[Decided, ...] = ()

    def __str__(self) -> str:
        phase = self.phase + (f" ({self.reason})" if self.reason else "")
        decisions = ", ".join(map(str, self.decisions)) or "no decisions"
        return f"{phase}, retries {self.retries}, version {self.version}; {decisions}"


class Story(msgspec.Struct, frozen=True, kw_only=True):
    """Jobs (manifests `jobs/<job>.yaml`), what happens to them, how each ends."""

    jobs: tuple[str, ...]
    what_happens: str
    ending: Ending
    crash: Crash | None = None
    #: the jobs cannot all run at once (each needs the whole cluster's GPUs): each one's
    #: pods must start only after every pod of the job before it finished, never a mix
    one_at_a_time: bool = False

    @property
    def name(self) -> str:
        return ", ".join(self.jobs)


STORIES: tuple[Story, ...] = (
    Story(
        jobs=("tensorflow-dist",),
        what_happens=(
            "ps/worker job; worker 1 crashes once (injected); only the workers restart, and"
            " the job completes when they do"
        ),
        crash=Crash(pod="tensorflow-dist-worker-1", exit_code=1),
        ending=Ending(
            phase="Completed",
            retries=1,
            version=1,
            decisions=(
                Decided("RestartTask", "PodFailed", exit_code=1),
                Decided("CompleteJob", "TaskCompleted"),
            ),
        ),
    ),
    Story(
        jobs=("mpi-allreduce",),
        what_happens=(
            "the MPI launcher exits with code 3 once (injected); its `exitCode: 3` policy"
            " restarts the whole job, which then completes"
        ),
        crash=Crash(pod="mpi-allreduce-mpimaster-0", exit_code=3),
        ending=Ending(
            phase="Completed",
            retries=1,
            version=2,
            decisions=(
                Decided("RestartJob", "PodFailed", exit_code=3),
                Decided("CompleteJob", "TaskCompleted"),
            ),
        ),
    ),
    Story(
        jobs=("gpu-train-a", "gpu-train-b"),
        what_happens=(
            "two 4-GPU jobs on 4 GPUs: the gang scheduler admits one whole, then the other;"
            " both complete, no deadlock"
        ),
        one_at_a_time=True,
        ending=Ending(phase="Completed"),
    ),
    Story(
        jobs=("flaky-train",),
        what_happens=(
            "the worker always fails; with `maxRetry: 2` the job runs twice, then fails and"
            " its parameter server is killed"
        ),
        ending=Ending(
            phase="Failed",
            reason="RetriesExhausted",
            retries=2,
            version=2,
            decisions=(
                Decided("RestartJob", "PodFailed", exit_code=1),
                Decided("RestartJob", "PodFailed", exit_code=1),
            ),
        ),
    ),
    Story(
        jobs=("backoff-train",),
        what_happens=(
            "flaky-train with a restart backoff (`lavalog.io/restart-backoff: \"1s,2,4s\"`,"
            " a lavalog extension): each restart waits longer, 1s then 2s, on a durable timer"
            " the timeline shows; the third exhausts `maxRetry: 3` and fails the job at once"
        ),
        ending=Ending(
            phase="Failed",
            reason="RetriesExhausted",
            retries=3,
            version=3,
            decisions=(
                Decided("RestartJob", "PodFailed", exit_code=1, waited=1.0),
                Decided("RestartJob", "PodFailed", exit_code=1, waited=2.0),
                Decided("RestartJob", "PodFailed", exit_code=1),
            ),
        ),
    ),
    Story(
        jobs=("preempted-train",),
        what_happens=(
            "the worker is preempted once (injected, exit 143, SIGTERM); the policy's"
            " `exitCode: 137` widened by an exit-code set (`lavalog.io/exit-codes.0: \"In"
            " 137,143\"`, a lavalog extension) restarts the whole job, which then completes"
        ),
        crash=Crash(pod="preempted-train-worker-0", exit_code=143),
        ending=Ending(
            phase="Completed",
            retries=1,
            version=2,
            decisions=(
                Decided("RestartJob", "PodFailed", exit_code=143),
                Decided("CompleteJob", "TaskCompleted"),
            ),
        ),
    ),
)


# --- the README's table -----------------------------------------------------------------


def readme_table(stories: tuple[Story, ...] = STORIES) -> str:
    """The README's demo table: one row per story, its ending in the last columns."""
    lines = [
        "| job | what happens | ends | retries | version | decisions |",
        "|---|---|---|---|---|---|",
    ]
    for story in stories:
        end = story.ending
        phase = f"**{end.phase}**" + (f" ({end.reason})" if end.reason else "")
        decisions = ", ".join(f"`{d}`" for d in end.decisions) or "none"
        jobs = ", ".join(f"`{job}`" for job in story.jobs)
        each = "each " if len(story.jobs) > 1 else ""
        lines.append(
            f"| {jobs} | {story.what_happens} | {each}{phase} | {end.retries} | {end.version}"
            f" | {decisions} |"
        )
    return "\n".join(lines)


# --- did it play out? -------------------------------------------------------------------


def check(
    story: Story, timelines: Mapping[str, Timeline], statuses: Mapping[str, JobRow]
) -> list[str]:
    """What differs from the story's promise, as seen in each job's timeline (the
    projections) and Job status (the cluster); empty when the story played out."""
    problems: list[str] = []
    for job in story.jobs:
        timeline = timelines.get(job)
        if timeline is None:
            problems.append(f"{job}: no timeline")
        else:
            problems += [f"{job}: {p}" for p in _timeline_problems(story.ending, timeline)]
        status = statuses.get(job)
        if status is None:
            problems.append(f"{job}: no Job status")
        else:
            problems += [f"{job}: Job status {p}" for p in _status_problems(story.ending, status)]
    if story.one_at_a_time and all(job in timelines for job in story.jobs):
        problems += _overlaps([timelines[job] for job in story.jobs])
    return problems


def _timeline_problems(end: Ending, timeline: Timeline) -> list[str]:
    t = timeline
    problems = _differences(
        end, phase=t.phase, reason=t.reason, retries=t.retry_count, version=t.version
    )
    decided = [mark for mark in timeline.decisions if mark.type == "ActionDecided"]
    waited = _waits(timeline)
    matches = len(decided) == len(end.decisions) and all(
        (mark.action, mark.trigger, waited.get(mark.timer_id))
        == (want.action, want.trigger, want.waited)
        and (want.exit_code is None or mark.exit_code == want.exit_code)
        for mark, want in zip(decided, end.decisions, strict=False)
    )
    if not matches:
        seen = [
            str(Decided(m.action, m.trigger, m.exit_code, waited.get(m.timer_id)))
            for m in decided
        ]
        want = [str(d) for d in end.decisions]
        problems.append(f"decisions {seen or 'none'}, expected {want or 'none'}")
    alive = [a.name for a in _attempts(timeline) if a.finished is None and a.deleted is None]
    if alive:
        problems.append(f"pods not ended: {', '.join(alive)}")
    return problems


def _waits(timeline: Timeline) -> dict[str, float]:
    """Seconds each timer made its action wait, by timer id (to the millisecond)."""
    return {
        mark.timer_id: round(mark.fire_at - mark.time, 3)
        for mark in timeline.decisions
        if mark.type == "TimerScheduled" and mark.fire_at is not None
    }


def _attempts(timeline: Timeline) -> list[AttemptView]:
    return [a for task in timeline.tasks for index in task.indexes for a in index.attempts]


def _status_problems(end: Ending, row: JobRow) -> list[str]:
    return _differences(
        end, phase=row.phase, reason=row.reason, retries=row.retries, version=row.version
    )


def _differences(end: Ending, *, phase: str, reason: str, retries: int, version: int) -> list[str]:
    expected = {"phase": end.phase, "retries": end.retries, "version": end.version}
    actual: dict[str, object] = {"phase": phase, "retries": retries, "version": version}
    if end.reason:
        expected["reason"], actual["reason"] = end.reason, reason
    return [
        f"{field} {actual[field]}, expected {want}"
        for field, want in expected.items()
        if actual[field] != want
    ]


def _overlaps(timelines: list[Timeline]) -> list[str]:
    """Jobs whose pods ran at the same time, though there was room for one at a time."""
    spans = []
    for timeline in timelines:
        attempts = _attempts(timeline)
        starts = [a.started for a in attempts if a.started is not None]
        ends = [a.finished if a.finished is not None else a.deleted for a in attempts]
        if not starts or any(end is None for end in ends):
            return [f"{timeline.name}: its pods did not all run and finish"]
        spans.append((min(starts), max(e for e in ends if e is not None), timeline.name))
    spans.sort()
    return [
        f"{later}'s pods started {first_end - start:.3f}s before {earlier}'s finished"
        for (_, first_end, earlier), (start, _, later) in pairwise(spans)
        if start < first_end
    ]
