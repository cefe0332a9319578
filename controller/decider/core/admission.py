"""Admission, decided: each new generation of a Job is judged once, and the verdict is
recorded (eventsourcing's "validate, then trigger the event").

Volcano's webhook judges a Job before the API server stores it; lavalog runs none, so the
decider judges each new generation it observes (`lavalog.controller.admission`: Volcano's
defaults and rules, lavalog's extensions) and records the verdict: `JobAdmitted`, with
the spec the job runs from then on (defaults applied) and its extensions, or
`JobRejected`, with every error. `evolve` folds the verdict like any other decision and
judges nothing itself.

A log recorded before admissions were recorded has JobRejected but no JobAdmitted:
`with_admissions` supplies them, so that such a log folds and audits as one written now.
"""

from __future__ import annotations

from collections.abc import Iterable

import msgspec

from lavalog.controller.admission import Admitted, Rejected, admit_job, admit_update
from lavalog.controller.decider.core.evolve import LogEvent, evolve
from lavalog.controller.decider.core.state import JobState, initial_state
from lavalog.events.decisions import JobAdmitted, JobRejected
from lavalog.events.observations import JobObserved


def judge(state: JobState, observation: JobObserved) -> Admitted | Rejected | None:
    """Admission's verdict on the generation `observation` brings, given the job's state
    with the observation folded in; None when it brings none (a late copy of a generation
    already judged, news of another incarnation)."""
    if observation.job_uid != state.uid or observation.generation <= state.generation:
        return None
    extensions = observation.extensions or {}
    if state.spec is None:
        return admit_job(observation.spec, extensions)
    return admit_update(state.spec, observation.spec, extensions)


def admission(observation: JobObserved, verdict: Admitted) -> JobAdmitted:
    """The record of `verdict`, caused by `observation`. Its id, `<cause>#admitted`, is
    named, not numbered among the step's decisions: every other decision keeps the id it
    had in logs recorded before admissions were."""
    return JobAdmitted(
        id=f"{observation.id}#admitted",
        key=observation.key,
        job_uid=observation.job_uid,
        time=observation.time,
        cause=observation.id,
        generation=observation.generation,
        spec=verdict.spec,
        exit_codes=verdict.exit_codes or msgspec.UNSET,
        restart_backoff=verdict.restart_backoff or msgspec.UNSET,
        uncounted_disruptions=verdict.uncounted_disruptions or msgspec.UNSET,
    )


def with_admissions(log: Iterable[LogEvent]) -> list[LogEvent]:
    """`log` (observations, each followed by its decisions) with a JobAdmitted right after
    every JobObserved that was admitted without one being recorded: the verdict as the
    decider reaches it now, on the state the log folds to there. A JobObserved with a
    recorded verdict, or none due, is left as it is."""
    events = list(log)
    judged = {event.cause for event in events if isinstance(event, JobAdmitted | JobRejected)}
    states: dict[str, JobState] = {}
    upcast: list[LogEvent] = []
    for event in events:
        state = evolve(states.get(event.key) or initial_state(event.key), event)
        upcast.append(event)
        if isinstance(event, JobObserved) and event.id not in judged:
            verdict = judge(state, event)
            if isinstance(verdict, Admitted):
                supplied = admission(event, verdict)
                upcast.append(supplied)
                state = evolve(state, supplied)
        states[event.key] = state
    return upcast
