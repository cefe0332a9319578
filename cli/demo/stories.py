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
from lavalog.projections.core.records import DecisionMark
from lavalog.projections.core.timeline import AttemptView, Timeline


class Fault(msgspec.Struct, frozen=True, kw_only=True):
    """What befalls `pod`, once, `after` simulated seconds into one of its runs. The pod's
    own program runs far longer than `after`, so the fault lands while it runs whatever
    the time scale."""

    pod: str
    after: float = 5.0


class Crash(Fault, frozen=True, kw_only=True):
    """The pod's containers exit with `exit_code`."""

    exit_code: int


class Preempt(Fault, frozen=True, kw_only=True):
    """vc-scheduler evicts the pod to preempt it for another (`DisruptionTarget`
    PreemptionByScheduler, then a delete)."""


class OomKill(Fault, frozen=True, kw_only=True):
    """The kernel's OOM killer ends the pod's `container` (exit code 137, OOMKilled)."""

    container: str


class Decided(msgspec.Struct, frozen=True):
    """An action the controller must decide on `trigger` (from a pod that exited with
    `exit_code`, when one is given, in `container`, when one is given), after a timer of
    `waited` seconds when one is given (a restart backoff); `uncounted`: a restart that
    uses no retry."""

    action: str
    trigger: str
    exit_code: int | None = None
    waited: float | None = None
    container: str = ""
    uncounted: bool = False

    def __str__(self) -> str:
        where = f" in {self.container}" if self.container else ""
        code = f" (exit {self.exit_code}{where})" if self.exit_code is not None else ""
        wait = f" after {format_duration(self.waited)}" if self.waited is not None else ""
        free = " (not counted)" if self.uncounted else ""
        return f"{self.trigger}{code} → {self.action}{wait}{free}"


class Ending(msgspec.Struct, frozen=True, kw_only=True):
    """How a job ends: its phase (and the reason, when it matters), its retry count and
    version, and exactly the actions decided on the way, in order; what its status said
    on the way (`says`: phrases of its phase messages) and what a failed container's
    last words say (`last_words`: phrases its timeline keeps)."""

    phase: str
    reason: str = ""
    retries: int = 0
    version: int = 0
    decisions: tuple[Decided, ...] = ()
    says: tuple[str, ...] = ()
    last_words: tuple[str, ...] = ()

    def __str__(self) -> str:
        phase = self.phase + (f" ({self.reason})" if self.reason else "")
        decisions = ", ".join(map(str, self.decisions)) or "no decisions"
        return f"{phase}, retries {self.retries}, version {self.version}; {decisions}"


class Story(msgspec.Struct, frozen=True, kw_only=True):
    """Jobs (manifests `jobs/<job>.yaml`), what happens to them, how each ends."""

    jobs: tuple[str, ...]
    what_happens: str
    ending: Ending
    #: injected one after another, each in the next run of its pod (a pod of that name
    #: the faults before it did not hit)
    faults: tuple[Crash | Preempt | OomKill, ...] = ()
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
        faults=(Crash(pod="tensorflow-dist-worker-1", exit_code=1),),
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
        faults=(Crash(pod="mpi-allreduce-mpimaster-0", exit_code=3),),
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
            'flaky-train with a restart backoff (`lavalog.io/restart-backoff: "1s,2,4s"`,'
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
            ' `exitCode: 137` widened by an exit-code set (`lavalog.io/exit-codes.0: "In'
            ' 137,143"`, a lavalog extension) restarts the whole job, which then completes'
        ),
        faults=(Crash(pod="preempted-train-worker-0", exit_code=143),),
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
    Story(
        jobs=("sidecar-train",),
        what_happens=(
            "a trainer beside a log-shipping sidecar; preempted once (injected): with"
            " `lavalog.io/uncounted-disruptions` (a lavalog extension) the restart uses no"
            " retry; then the trainer is OOMKilled (injected) and the sidecar exits 0: the"
            " `exitCode: 137` policy sees the trainer's code (Volcano reads the first"
            " container's, the sidecar's 0) and restarts the job; its status names the"
            " container, exit code, reason, node and retries left, its timeline keeps the"
            " trainer's last words; the third run completes"
        ),
        faults=(
            Preempt(pod="sidecar-train-train-0"),
            OomKill(pod="sidecar-train-train-0", container="trainer"),
        ),
        ending=Ending(
            phase="Completed",
            retries=1,
            version=3,
            decisions=(
                Decided("RestartJob", "PodEvicted", uncounted=True),
                Decided("RestartJob", "PodFailed", exit_code=137, container="trainer"),
                Decided("CompleteJob", "TaskCompleted"),
            ),
            says=(
                "disrupted by PreemptionByScheduler, matched job policy #1; not counted as a"
                " retry (lavalog.io/uncounted-disruptions): 1 retry left",
                "container trainer (exit code 137, OOMKilled) on node-",
                "matched job policy #0; no retries left (retryCount 1, maxRetry 2)",
            ),
            last_words=("loading shard 7",),
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
    seen = [_decided(mark, waited.get(mark.timer_id)) for mark in decided]
    matches = len(seen) == len(end.decisions) and all(
        (mark.action, mark.trigger, mark.waited, mark.uncounted)
        == (want.action, want.trigger, want.waited, want.uncounted)
        and (want.exit_code is None or mark.exit_code == want.exit_code)
        and (not want.container or mark.container == want.container)
        for mark, want in zip(seen, end.decisions, strict=False)
    )
    if not matches:
        shown = [str(d) for d in seen]
        want = [str(d) for d in end.decisions]
        problems.append(f"decisions {shown or 'none'}, expected {want or 'none'}")
    for phrase in end.says:
        if not any(phrase in phase.message for phase in timeline.phases):
            problems.append(f"its status never said {phrase!r}")
    words = [c.message for a in _attempts(timeline) for c in a.containers if c.exit_code]
    for phrase in end.last_words:
        if not any(phrase in message for message in words):
            problems.append(f"no failed container's last words say {phrase!r}")
    alive = [a.name for a in _attempts(timeline) if a.finished is None and a.deleted is None]
    if alive:
        problems.append(f"pods not ended: {', '.join(alive)}")
    return problems


def _decided(mark: DecisionMark, waited: float | None) -> Decided:
    """An action on the timeline, as a story tells it."""
    container = mark.failure.container if mark.failure is not None else ""
    return Decided(
        mark.action, mark.trigger, mark.exit_code, waited, container, uncounted=mark.uncounted
    )


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
