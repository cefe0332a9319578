"""Which of a job's queued decisions to carry out next, and which need not be.

A job's decisions are carried out in log order (its Events go off the lanes, see
`service.recorder`), with two exceptions that matter when the actuator falls behind (a
burst of 10,000 Jobs, a controller restarted under churn), both as Volcano's controller
behaves (one sync of a job writes the status its queued events add up to, and creates
the pods in the same pass):

- a PodGroup or pod create goes before the status writes queued ahead of it (`next_up`):
  its pods do not wait for the job's bookkeeping. Not past a status write that ends the
  run it creates pods for, or starts a later one (`run_over`): the create would
  then be refused when carried out again, and must be here too;
- a status write is skipped when a later one for the same Job incarnation in the same
  phase is queued behind it with nothing between that reads the status or must follow
  it (`superseded`): it carries the whole status lavalog owns, so the later one
  overwrites all of it. The same holds once the write has waited for its turn of the
  API budget: the latest write that replaces it then goes in its place (`replacement`),
  as Volcano writes one status per sync however many changes it folds in. A write of
  another phase is made, unless the write before it only writes again the phase the Job
  shows already (its pods' counts while Pending, say): every phase the job passes
  through reaches the API, in order, as each of Volcano's does (`kubectl get vcjob -w`
  and the conditions show it), and a write that changes no phase is overwritten whole
  by the next, whatever its phase. What may be between: the PodGroup's writes and the
  plugin objects' removal, which read neither. A pod create reads the status
  (staleness), as does a plugin objects' ensure (none for a run that is over), and a
  kill must follow the status that starts a new job version or ends the run (the
  decider orders them so). If the process stops before the later one is made, it is
  carried out again on restart (the offset is not committed past it).

Pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from lavalog.events.decisions import (
    Decision,
    PluginResourcesDelete,
    PodGroupCreate,
    PodGroupDelete,
    PodsCreate,
    StatusWrite,
)
from lavalog.events.volcano.api import run_over

#: decisions that may go before the status writes queued ahead of them
CREATES = (PodGroupCreate, PodsCreate)
#: decisions a superseded status write may be skipped across: they read no status (a
#: plugin objects' ensure reads the phase: none is made for a run that is over)
_STATUS_BLIND = (PodGroupCreate, PodGroupDelete, PluginResourcesDelete)


def next_up(queued: Sequence[Decision]) -> int:
    """The index in `queued` (a job's lane, in log order) of the decision to carry out next."""
    for index, decision in enumerate(queued):
        if isinstance(decision, CREATES):
            ahead = queued[:index]
            return index if all(_may_pass(decision, other) for other in ahead) else 0
        if not isinstance(decision, StatusWrite):
            return 0
    return 0


def _may_pass(create: Decision, ahead: Decision) -> bool:
    if not isinstance(ahead, StatusWrite):
        return False
    if isinstance(create, PodsCreate):
        status = ahead.status
        return not run_over(status.version, status.state.phase, create.job_version)
    return True


def replacement(
    decision: Decision, later: Sequence[Decision], *, shown: str | None = None
) -> int | None:
    """The index in `later` of the last status write that replaces `decision` (directly or
    through the writes between; `superseded` says how `shown` counts), or None when none
    does."""
    found: int | None = None
    start, current = 0, decision
    while (index := _replaced_at(current, later[start:], shown)) is not None:
        found = start + index
        start, current = found + 1, later[found]
    return found


def superseded(decision: Decision, later: Sequence[Decision], *, shown: str | None = None) -> bool:
    """Whether `decision` is a status write that one in `later` (the decisions queued
    behind it in its lane, in log order) replaces: the next write, of the same Job
    incarnation and phase, or of any phase when `decision` writes the phase `shown`
    (the phase the Job shows on the API server while `decision` is carried out: known
    only for a lane's first decision, with nothing of its job under way)."""
    return _replaced_at(decision, later, shown) is not None


def replaced_by_last(queued: Sequence[Decision]) -> int | None:
    """The index in `queued` (a job's lane, in log order) of the status write that the
    last of them, just queued, supersedes (`superseded`), or None: left out as soon as
    the later one is queued, not when the lane's turn comes, so that a lane waiting for
    its turn holds one write of a phase, not every write decided meanwhile."""
    last = queued[-1]
    if not isinstance(last, StatusWrite):
        return None
    found = _adjacent_write(queued, range(len(queued) - 2, -1, -1))
    return found[0] if found is not None and _replaces(last, found[1], None) else None


def _replaced_at(decision: Decision, later: Sequence[Decision], shown: str | None) -> int | None:
    if not isinstance(decision, StatusWrite):
        return None
    found = _adjacent_write(later, range(len(later)))
    return found[0] if found is not None and _replaces(found[1], decision, shown) else None


def _adjacent_write(
    queued: Sequence[Decision], order: Iterable[int]
) -> tuple[int, StatusWrite] | None:
    """The first status write of `queued` taken in `order`, and its index, if only
    decisions that read no status come before it."""
    for index in order:
        decision = queued[index]
        if isinstance(decision, StatusWrite):
            return index, decision
        if not isinstance(decision, _STATUS_BLIND):
            return None
    return None


def _replaces(later: StatusWrite, earlier: StatusWrite, shown: str | None) -> bool:
    """Whether `later` overwrites all `earlier` writes and leaves no phase out: the same Job
    incarnation, and the same phase or `earlier` writing again the phase `shown`."""
    phase = earlier.status.state.phase
    return later.job_uid == earlier.job_uid and phase in (later.status.state.phase, shown)
