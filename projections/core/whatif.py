"""What-if: replay a job's recorded observations under a changed spec and compare.

The audit replays the facts with the recorded spec; the what-if replays them with
another one (every `JobObserved` carries the changed spec) and walks both decision
streams on the observations' clock up to the first observation where they part. Past
that point the recorded facts describe the run that happened, not the alternative one,
so the report keeps them apart: the recorded pod failures still to come are *known
facts of the old run*, the alternative's end phase is *unknown*. Admissions are left out
of both runs: a `JobAdmitted` records the spec, which differs by design.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Iterable
from typing import Any

import msgspec

from lavalog.controller.decider.core import replay
from lavalog.events.codec import LogEvent, decode_event, to_builtins
from lavalog.events.decisions import AnyDecision, Decision, JobAdmitted
from lavalog.events.observations import (
    EXTENSION_PREFIX,
    AnyObservation,
    JobObserved,
    Observation,
    PodDeleted,
    PodObserved,
)
from lavalog.projections.core.audit import Replay
from lavalog.projections.core.wire import Time

#: phases after which a job runs no pods (Volcano's finished states)
TERMINAL = frozenset({"Completed", "Failed", "Aborted", "Terminated"})

#: a change to a Job manifest: `{"spec": ..., "metadata": {"annotations": ...}}`, where the
#: annotations are the job's `lavalog.io/` extensions (the only ones the log keeps)
SpecChange = Callable[[dict[str, Any]], dict[str, Any]]
_ANNOTATION = "metadata.annotations."

_STEP = re.compile(r"(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?:\[(?P<select>[^\]]+)\])?")


class Step(msgspec.Struct, frozen=True, kw_only=True):
    """One observation and what each run decided of it (decision types, in order)."""

    observation: str
    time: Time
    fact: str
    recorded: tuple[str, ...]
    alternative: tuple[str, ...]


class KnownAfter(msgspec.Struct, frozen=True, kw_only=True):
    """A recorded pod failure after the divergence: a fact of the old run only."""

    pod: str
    time: Time
    exit_code: int | None
    reason: str
    #: the container whose exit code it is
    container: str = ""


class WhatIf(msgspec.Struct, frozen=True, kw_only=True):
    key: str
    #: "recorded" when the log holds decisions, else "recomputed" from the facts
    baseline: str
    steps: tuple[Step, ...]
    #: the observation where the runs part, None when they never do
    divergence: str | None
    recorded_phase: str
    #: the alternative's phase after the last step shown; unknown beyond it
    alternative_phase: str
    recorded_restarts: int
    alternative_restarts: int
    known_after: tuple[KnownAfter, ...]
    #: recorded pod run time (seconds) after the divergence: saved if the alternative
    #: has ended there, and the time one more attempt costs if it goes on where the
    #: record ended (the mean recorded attempt), spent
    pod_seconds_saved: float = 0.0
    pod_seconds_spent: float = 0.0
    #: why each run is in its phase there: the reason and message of its last phase
    #: change (what the Job's status says), e.g. a restart that counted no retry
    recorded_why: str = ""
    alternative_why: str = ""

    @property
    def identical(self) -> bool:
        return self.divergence is None


class Summary(msgspec.Struct, kw_only=True):
    """`whatif --all`: how the change would have moved a whole history."""

    jobs: int = 0
    diverged: int = 0
    #: the alternative's phase at its last known point differs from the recorded end
    other_phase: int = 0
    more_restarts: int = 0
    fewer_restarts: int = 0
    pod_hours_saved: float = 0.0
    pod_hours_spent: float = 0.0

    def add(self, report: WhatIf) -> None:
        self.jobs += 1
        self.diverged += not report.identical
        self.other_phase += report.alternative_phase != report.recorded_phase
        self.more_restarts += report.alternative_restarts > report.recorded_restarts
        self.fewer_restarts += report.alternative_restarts < report.recorded_restarts
        self.pod_hours_saved += report.pod_seconds_saved / 3600
        self.pod_hours_spent += report.pod_seconds_spent / 3600


def parse_set(assignment: str) -> SpecChange:
    """`spec.maxRetry=5` or `spec.tasks[worker].policies=[...]` (value as JSON, else text),
    or `metadata.annotations.lavalog.io/exit-codes.0=In 1,137` (value as text)."""
    path, sep, raw = assignment.partition("=")
    if sep and path.strip().startswith(_ANNOTATION):
        return _set_annotation(assignment, path.strip().removeprefix(_ANNOTATION), raw)
    steps = path.strip().split(".")
    if not sep or steps[0] != "spec" or len(steps) < 2:
        raise ValueError(
            f"--set {assignment!r}: expected spec.FIELD=VALUE or metadata.annotations.NAME=VALUE"
        )
    try:
        value: Any = json.loads(raw)
    except json.JSONDecodeError:
        value = raw
    parsed = []
    for text in steps:
        match = _STEP.fullmatch(text)
        if match is None:
            raise ValueError(f"--set {assignment!r}: bad path element {text!r}")
        parsed.append((match["name"], match["select"]))

    def change(manifest: dict[str, Any]) -> dict[str, Any]:
        manifest = copy.deepcopy(manifest)
        node: Any = manifest
        for position, (name, select) in enumerate(parsed):
            last = position == len(parsed) - 1
            if select is None:
                if last:
                    node[name] = value
                else:
                    node = node.setdefault(name, {})
                continue
            items = node.get(name) or []
            found = [i for i in items if isinstance(i, dict) and i.get("name") == select]
            if not found:
                raise ValueError(f"--set {assignment!r}: no {name} named {select!r}")
            if last:
                items[items.index(found[0])] = value
            else:
                node = found[0]
        return manifest

    return change


def _set_annotation(assignment: str, name: str, value: str) -> SpecChange:
    if not name.startswith(EXTENSION_PREFIX):
        raise ValueError(
            f"--set {assignment!r}: only {EXTENSION_PREFIX} annotations change decisions"
        )

    def change(manifest: dict[str, Any]) -> dict[str, Any]:
        metadata = manifest.get("metadata", {})
        annotations = {**metadata.get("annotations", {}), name: value}
        return {**manifest, "metadata": {**metadata, "annotations": annotations}}

    return change


def compose(changes: Iterable[SpecChange]) -> SpecChange:
    chain = list(changes)

    def change(manifest: dict[str, Any]) -> dict[str, Any]:
        for one in chain:
            manifest = one(manifest)
        return manifest

    return change


def whatif(events: Iterable[LogEvent], replay: Replay, change: SpecChange) -> WhatIf:
    """Compare the job's decisions with those its facts lead to under `change`d specs."""
    observations: list[AnyObservation] = []
    recorded_by_cause: dict[str, list[dict[str, Any]]] = {}
    seen: set[str] = set()
    for event in events:
        if isinstance(event, Observation):
            observations.append(event)
        elif (
            isinstance(event, Decision)
            and not isinstance(event, JobAdmitted)
            and event.id not in seen
        ):
            seen.add(event.id)
            recorded_by_cause.setdefault(event.cause, []).append(to_builtins(event))
    if not observations:
        raise ValueError("no observations to replay")
    baseline = "recorded" if recorded_by_cause else "recomputed"
    if not recorded_by_cause:
        for observation, decisions in replay(observations):
            recorded_by_cause[observation.id] = _compared(decisions)
    changed = [_changed(o, change) if isinstance(o, JobObserved) else o for o in observations]
    steps: list[Step] = []
    divergence: str | None = None
    alternative_all: list[dict[str, Any]] = []
    for original, (_, decisions) in zip(observations, replay(changed), strict=True):
        alternative = _compared(decisions)
        recorded = sorted(recorded_by_cause.get(original.id, []), key=lambda d: d["id"])
        alternative_all += alternative
        if recorded or alternative:
            steps.append(
                Step(
                    observation=original.id,
                    time=original.time,
                    fact=_fact(original),
                    recorded=tuple(d["type"] for d in recorded),
                    alternative=tuple(d["type"] for d in alternative),
                )
            )
        if _acts(recorded) != _acts(alternative):
            divergence = original.id
            break
    after: list[AnyObservation] = []
    if divergence is not None:
        index = next(i for i, o in enumerate(observations) if o.id == divergence)
        after = observations[index + 1 :]
    saved = spent = 0.0
    alternative_phase, alternative_why = _last_phase_and_why(alternative_all)
    recorded_phase, recorded_why = _last_phase_and_why(
        d for ds in recorded_by_cause.values() for d in ds
    )
    if divergence is not None:
        runs = _pod_runs(observations)
        at = next(o.time for o in observations if o.id == divergence)
        if alternative_phase in TERMINAL:
            saved = sum(max(0.0, end - max(start, at)) for start, end in runs)
        elif recorded_phase in TERMINAL and runs:
            spent = (
                sum(end - start for start, end in runs)
                / len(runs)
                * _pods_per_attempt(observations)
            )
    return WhatIf(
        key=observations[0].key,
        baseline=baseline,
        steps=tuple(steps),
        divergence=divergence,
        recorded_phase=recorded_phase,
        alternative_phase=alternative_phase,
        recorded_restarts=_restarts(d for ds in recorded_by_cause.values() for d in ds),
        alternative_restarts=_restarts(alternative_all),
        known_after=_next_failures(after),
        pod_seconds_saved=saved,
        pod_seconds_spent=spent,
        recorded_why=recorded_why,
        alternative_why=alternative_why,
    )


def whatif_from_sets(bodies: Iterable[bytes], sets: Iterable[str]) -> WhatIf:
    """The what-if of a job's stored events (raw bodies) under `--set`-style changes."""
    events = [decode_event(body) for body in bodies]
    return whatif(events, replay, compose(parse_set(text) for text in sets))


def _changed(observation: JobObserved, change: SpecChange) -> JobObserved:
    """The observation of the Job as if its manifest had been `change`d."""
    manifest = change(
        {
            "spec": observation.spec,
            "metadata": {"annotations": dict(observation.extensions or {})},
        }
    )
    annotations = manifest.get("metadata", {}).get("annotations", {})
    extensions = {k: v for k, v in annotations.items() if k.startswith(EXTENSION_PREFIX)}
    return msgspec.structs.replace(
        observation, spec=manifest["spec"], extensions=extensions or msgspec.UNSET
    )


def _compared(decisions: list[AnyDecision]) -> list[dict[str, Any]]:
    """The decisions the runs are compared by: all but the admission."""
    return [to_builtins(d) for d in decisions if not isinstance(d, JobAdmitted)]


def _acts(decisions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Decisions as what they do, without the words that say why: a status message
    names the spec's own numbers (`maxRetry is 5`), so another spec words the same act
    differently, which is no divergence."""
    acts = []
    for decision in decisions:
        if decision["type"] == "PhaseChanged":
            decision = {**decision, "message": ""}
        elif decision["type"] == "StatusWrite":
            status = decision["status"]
            state = {**status.get("state", {}), "message": ""}
            decision = {**decision, "status": {**status, "state": state}}
        acts.append(decision)
    return acts


def _fact(observation: AnyObservation) -> str:
    if isinstance(observation, PodObserved):
        code = "" if observation.exit_code is None else f" exit {observation.exit_code}"
        container = f" in {observation.container}" if observation.container else ""
        disrupted = f" disrupted by {observation.disruption}" if observation.disruption else ""
        fact = f"{type(observation).__name__} {observation.pod} {observation.phase}"
        return fact + code + container + disrupted
    return type(observation).__name__


def _last_phase_and_why(decisions: Iterable[dict[str, Any]]) -> tuple[str, str]:
    """The phase of the last phase change, and its reason and message."""
    phase = why = ""
    for decision in sorted(decisions, key=lambda d: (d["time"], d["id"])):
        if decision["type"] == "PhaseChanged":
            phase = str(decision["phase"])
            reason, message = decision.get("reason", ""), decision.get("message", "")
            why = f"{reason}: {message}" if message else str(reason)
    return phase, why


def _restarts(decisions: Iterable[dict[str, Any]]) -> int:
    return sum(
        1
        for d in decisions
        if d["type"] == "ActionDecided" and str(d.get("action", "")).startswith("Restart")
    )


def _next_failures(after: list[AnyObservation]) -> tuple[KnownAfter, ...]:
    """The next recorded failure of each pod after the divergence (old run's facts)."""
    first: dict[str, KnownAfter] = {}
    for observation in after:
        if (
            isinstance(observation, PodObserved)
            and observation.phase == "Failed"
            and observation.pod not in first
        ):
            first[observation.pod] = KnownAfter(
                pod=observation.pod,
                time=observation.time,
                exit_code=observation.exit_code,
                reason=observation.reason,
                container=observation.container or "",
            )
    return tuple(first.values())


def _pod_runs(observations: list[AnyObservation]) -> list[tuple[float, float]]:
    """(start, end) of each recorded pod incarnation's running time, on the facts' clock."""
    started: dict[str, float] = {}
    runs: list[tuple[float, float]] = []
    for observation in observations:
        if not isinstance(observation, PodObserved | PodDeleted):
            continue
        uid = observation.pod_uid
        running = isinstance(observation, PodObserved) and observation.phase == "Running"
        if running and uid not in started:
            started[uid] = observation.time
        elif not running and uid in started:
            runs.append((started.pop(uid), observation.time))
    end = observations[-1].time
    runs += [(start, end) for start in started.values()]
    return runs


def _pods_per_attempt(observations: list[AnyObservation]) -> int:
    return len({o.pod for o in observations if isinstance(o, PodObserved | PodDeleted)}) or 1
