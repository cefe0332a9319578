"""One observation being decided: the working state and the decisions made so far.

Every decision is folded into the working state as soon as it is made (with the same
`evolve` that rebuilds state from the log), so later rules in the same step see its
effect, and the state at the end equals `fold(evolve, state, [observation, *made])`.
"""

from __future__ import annotations

from typing import Any, TypeVar

import msgspec

from lavalog.controller.decider.core.counts import counts_of
from lavalog.controller.decider.core.evolve import evolve, fold_decided
from lavalog.controller.decider.core.request import ActionRequest
from lavalog.controller.decider.core.state import JobState, PodCounts, incarnation_state
from lavalog.events.decisions import AnyDecision, JobAdmitted
from lavalog.events.observations import AnyObservation, JobObserved
from lavalog.events.volcano.api import JobSpec

D = TypeVar("D", bound=AnyDecision)


class Step:
    """The context every rule of the decider works on."""

    __slots__ = (
        "_observed",
        "acted",
        "admitted",
        "before",
        "decisions",
        "killed_targets",
        "now",
        "observation",
        "spec",
        "state",
        "status_checked",
    )

    #: the admitted spec every rule runs on, set once the step is known to decide (`flow`:
    #: rules run only for admitted jobs, and no decision of theirs changes the spec).
    #: Plain slots, not properties: the rules read them several times a step
    spec: JobSpec

    def __init__(self, state: JobState, observation: AnyObservation, observed: JobState) -> None:
        """`observed`: `evolve(state, observation)`, folded by the caller."""
        #: the state of the observed Job's incarnation before the observation
        self.before = state
        if type(observation) is JobObserved:
            self.before = incarnation_state(state, observation.job_uid)
        self.observation = observation
        #: the event time: the decider's only clock
        self.now = observation.time
        #: the working state; `_observed`: the state after the observation and its admission
        self.state = self._observed = observed
        #: the admission of the generation this observation brings, if it was admitted
        self.admitted: JobAdmitted | None = None
        #: the decisions the rules made, numbered in order
        self.decisions: list[AnyDecision] = []
        #: a RestartTask/RestartPod/RestartPartition killed pods (see `replacement`)
        self.killed_targets = False
        #: the request this step acts on (its action, or a sync, on what happened), for
        #: saying why in a phase change its follow-up syncs make (`why`)
        self.acted: ActionRequest | None = None
        #: the working state the status was last checked against (`flow._write_status`):
        #: while it is the working state, nothing was decided that could change the status
        self.status_checked: JobState | None = None

    def counts(self) -> PodCounts:
        """Pod counts of the working state (kept with its pods)."""
        return counts_of(self.state)

    @property
    def made(self) -> list[AnyDecision]:
        """Everything this step decided, in the order it is folded: the admission first."""
        if self.admitted is None:
            return self.decisions
        return [self.admitted, *self.decisions]

    def admit(self, admitted: JobAdmitted) -> None:
        """Record the admission before any rule runs on the spec it admits (named, not
        numbered: see `admission.admission`)."""
        assert not self.decisions, "admission comes first"
        self.admitted = admitted
        self.state = self._observed = evolve(self.state, admitted)

    def emit(self, kind: type[D], **fields: Any) -> D:
        """Make a decision with a deterministic id derived from its cause, and fold it in."""
        observation = self.observation
        decision = kind(
            id=self.next_id(),
            key=observation.key,
            job_uid=self.state.uid,
            time=observation.time,
            cause=observation.id,
            **fields,
        )
        return self.record(decision)

    def next_id(self) -> str:
        """The id of the decision this step makes next: its cause's, numbered."""
        return _decision_id(self.observation.id, len(self.decisions))

    def record(self, decision: D) -> D:
        """Fold in a decision made here with `next_id`, the observation's key, time and id
        (its cause) and the working state's uid, as `emit` makes one. For the decisions of
        nearly every step that decides (a status write, a phase change): made with their
        fields named at the call, they cost no keyword dicts, which cost `emit` about as
        much as the decision itself."""
        self.decisions.append(decision)
        self.state = fold_decided(self.state, decision)  # made about this job's uid
        return decision

    def reorder(self, decisions: list[AnyDecision]) -> None:
        """Carry out this step's decisions in another order, which must lead to the same
        state; their ids are numbered again, so that ids keep ascending in log order."""
        assert sorted(d.id for d in decisions) == sorted(d.id for d in self.decisions)
        self.decisions = _numbered(decisions)

    def substitute(self, old: AnyDecision, new: list[AnyDecision]) -> None:
        """Put `new` in the place of `old`: they must do what `old` did and more, of which
        nothing decided after `old` in this step depends (a kill that also makes the pods
        again). The working state is folded again (on the observation and its admission);
        ids are numbered again."""
        at = self.decisions.index(old)
        self.decisions = _numbered([*self.decisions[:at], *new, *self.decisions[at + 1 :]])
        state = self._observed
        for decision in self.decisions:
            state = evolve(state, decision)
        self.state = state


def _numbered(decisions: list[AnyDecision]) -> list[AnyDecision]:
    """`decisions` with ids `<cause>#<n>` by position (a decision already so numbered is kept)."""
    return [
        d if d.id == (wanted := _decision_id(d.cause, n)) else msgspec.structs.replace(d, id=wanted)
        for n, d in enumerate(decisions)
    ]


def _decision_id(cause: str, number: int) -> str:
    return f"{cause}#{number}"
