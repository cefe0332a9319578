"""The decider's bookkeeping for one input partition: states, replay rules, snapshots.

Offsets below `committed` were already decided before a restart: they rebuild state but
their decisions are not produced again. Offsets below a job's `reflects` offset are
already in its restored state and are skipped. The timers such a rebuilt state holds
were scheduled by decisions not produced again, so `rebuilt_timers` hands them over
once the rebuild has caught up (a timer must not be lost to a restart).
"""

from __future__ import annotations

from collections.abc import Iterator

from lavalog.controller.decider.core import initial_state, step
from lavalog.controller.decider.core.due_timers import DueTimer
from lavalog.controller.decider.core.snapshots import (
    CHECKPOINT_KEY,
    Checkpoint,
    JobSnapshot,
    Restored,
    SettledJobSnapshot,
    SnapshotRecord,
)
from lavalog.controller.decider.core.state import JobState, forgettable
from lavalog.events.decisions import AnyDecision
from lavalog.events.observations import AnyObservation


class PartitionDecider:
    def __init__(self, restored: Restored, *, committed: int) -> None:
        self.states = restored.states.copy()
        self._reflects = dict(restored.reflects)
        self.replay_from = restored.checkpoint
        self.committed = max(committed, restored.checkpoint)
        #: the offset after the last one applied: the states reflect everything before it
        self.applied_to = restored.checkpoint
        self._dirty: set[str] = set()
        #: offsets below `committed` are still to be replayed silently
        self._rebuilding = restored.checkpoint < self.committed
        self._rebuilt = False
        #: the job's state before and after the observation applied last (None: none
        #: held), for what the service counts of each step (`volcano_metrics`)
        self.stepped: tuple[JobState | None, JobState | None] = (None, None)

    def apply(self, offset: int, observation: AnyObservation) -> list[AnyDecision]:
        """Decide one observation at `offset`; [] for one already decided or reflected."""
        if self._rebuilding and offset + 1 >= self.committed:
            self._rebuilding, self._rebuilt = False, True
        self.applied_to = offset + 1
        key = observation.key
        before = self.states.get(key)
        if self._reflects and offset < self._reflects.get(key, 0):
            self.stepped = (before, before)
            return []
        state, decisions = step(before or initial_state(key), observation)
        if forgettable(state):
            self.states.pop(key, None)  # as `replay` does: nothing of it outlives it
            self.stepped = (before, None)
        else:
            self.states[key] = state
            self.stepped = (before, state)
        self._dirty.add(key)
        return decisions if offset >= self.committed else []

    def snapshot(self, next_offset: int) -> list[tuple[str, SnapshotRecord | None]]:
        """Records for every job changed since the last snapshot, then the checkpoint.

        A deleted job gets a tombstone (None), a settled one its compact record.
        """
        records: list[tuple[str, SnapshotRecord | None]] = []
        for key in sorted(self._dirty):
            frozen = self.states.frozen(key)
            if frozen is not None:
                records.append((key, SettledJobSnapshot(offset=next_offset, frozen=frozen)))
            elif (state := self.states.get(key)) is None:
                records.append((key, None))
            else:
                records.append((key, JobSnapshot(offset=next_offset, state=state)))
        checkpoint = Checkpoint.at(next_offset, settled=self.states.settled_count > 0)
        records.append((CHECKPOINT_KEY, checkpoint))
        self._dirty.clear()
        self._reflects = {key: at for key, at in self._reflects.items() if at > next_offset}
        return records

    @property
    def dirty(self) -> int:
        return len(self._dirty)

    def rebuilt_timers(self) -> list[DueTimer]:
        """Once, after the last already-decided offset was applied: the timers pending in
        the rebuilt states. Empty before that, after that, and when nothing was replayed."""
        if not self._rebuilt:
            return []
        self._rebuilt = False
        return list(self.timers())

    def timers(self) -> Iterator[DueTimer]:
        for state in self.states.working():  # a settled job has no timer
            for timer in state.timers.values():
                yield DueTimer(timer.fire_at, state.key, state.uid, timer.timer_id)
