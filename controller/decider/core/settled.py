"""Settled jobs: finished, with nothing in flight, held as a compact record instead of
their working state, so that the decider's memory follows the jobs that run, not every
job that ever ran.

A finished Job (Completed, Failed, Terminated, or Aborted) can still receive facts:
a Command (ResumeJob brings an Aborted job back), a spec edit, a pod deleted by
someone, its own deletion. Each of them is decided on the job's whole state, exactly as
if it had never left memory: the compact record is that state, losslessly encoded
(`freeze`), and it is decoded (`thaw`) for the next fact about the job. So `step` sees the
same state with or without the round trip, and the decisions are the same.

Only a job with nothing in flight settles: no timer pending (a TTL deletion or a delayed
action must be found by the service's timer queue), no pod requested, running or being
deleted, no PodGroup, no refused creates, no Commands deferred, pods known. Its next
fact then usually finds it settled again after one step.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator, MutableMapping

import msgspec

from lavalog.controller.decider.core.counts import counts_of
from lavalog.controller.decider.core.state import JobState, PodCounts
from lavalog.events.volcano.api import JobPhase

#: phases no pod runs in again unless a Command (ResumeJob on Aborted) says so
_SETTLING_PHASES = frozenset(
    {JobPhase.COMPLETED, JobPhase.FAILED, JobPhase.TERMINATED, JobPhase.ABORTED}
)

_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(JobState)


def settled(state: JobState) -> bool:
    """Whether `state` is a finished job with nothing in flight (see the module)."""
    return (
        state.phase in _SETTLING_PHASES
        and not state.timers
        and state.podgroup is None
        and state.refused_creates is None
        and not state.deferred_actions
        and not state.pods_unknown
        and not state.early
        and _all_pods_ended(counts_of(state))
    )


def _all_pods_ended(counts: PodCounts) -> bool:
    """Every pod Succeeded or Failed, none being deleted (or asked for: counted Pending)."""
    return not (counts.pending or counts.running or counts.unknown or counts.terminating)


def freeze(state: JobState) -> bytes:
    """The compact record of `state`: its MessagePack encoding, compressed."""
    return zlib.compress(_encoder.encode(state), 1)


def thaw(record: bytes) -> JobState:
    """The state `record` was frozen from, equal to it in every field."""
    return _decoder.decode(zlib.decompress(record))


class JobStates(MutableMapping[str, JobState]):
    """Job states by key, settled ones held frozen: storing a state files it by `settled`,
    reading one thaws it if it was frozen (a new state each time; states are values)."""

    def __init__(self) -> None:
        self._working: dict[str, JobState] = {}
        self._frozen: dict[str, bytes] = {}

    def __getitem__(self, key: str) -> JobState:
        state = self._working.get(key)
        if state is not None:
            return state
        return thaw(self._frozen[key])

    def get(self, key: str, default: JobState | None = None) -> JobState | None:  # type: ignore[override]
        """As `Mapping.get`, without its exception for a job not held (most facts are about
        working jobs: this is on the decider's path for each one)."""
        state = self._working.get(key)
        if state is not None:
            return state
        record = self._frozen.get(key)
        return default if record is None else thaw(record)

    def __setitem__(self, key: str, state: JobState) -> None:
        if state.phase in _SETTLING_PHASES and settled(state):  # the phase: on every step
            self._working.pop(key, None)
            self._frozen[key] = freeze(state)
        else:
            self._frozen.pop(key, None)
            self._working[key] = state

    def __delitem__(self, key: str) -> None:
        if self._working.pop(key, None) is None:
            del self._frozen[key]

    def __iter__(self) -> Iterator[str]:
        yield from self._working
        yield from self._frozen

    def __len__(self) -> int:
        return len(self._working) + len(self._frozen)

    def __contains__(self, key: object) -> bool:
        return key in self._working or key in self._frozen

    def copy(self) -> JobStates:
        copied = JobStates()
        copied._working, copied._frozen = dict(self._working), dict(self._frozen)
        return copied

    def working(self) -> Iterator[JobState]:
        """The states not settled: the only ones that can hold timers."""
        return iter(self._working.values())

    def frozen(self, key: str) -> bytes | None:
        """The compact record of a settled job; None for one not settled or not held."""
        return self._frozen.get(key)

    def put_frozen(self, key: str, record: bytes) -> None:
        """Hold a compact record as it was read (a snapshot), without thawing it."""
        self._working.pop(key, None)
        self._frozen[key] = record

    @property
    def settled_count(self) -> int:
        return len(self._frozen)
