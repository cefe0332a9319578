"""Decider snapshots in the compacted `lavalog.state` topic, and restoring from them.

One record per job, keyed by the job key (so it lands on the same partition number as
the job's observations: the two topics have the same partition count), saying "this
state reflects every event of the job before input offset X". After all dirty jobs of
a snapshot are written, a checkpoint record (key `__checkpoint__`) names the offset the
snapshot was taken at. Restoring replays from the last checkpoint; a job whose record is
newer than it (a snapshot cut short by a crash) skips the events it already reflects.
A settled job (`settled`) is written as its compact record and restored without being
decoded until a fact about it comes.

Rolling back to a controller that knows no settled records is safe: such a reader skips
records it cannot decode and replays from the checkpoint's `offset`, so while settled
records are on the topic that offset is 0 (the log from its start rebuilds the settled
jobs; below the group's committed offset nothing is decided again), and the offset the
snapshot was taken at is in `taken_at`, which it does not read.
"""

from __future__ import annotations

from collections.abc import Iterable

import msgspec

from lavalog.controller.decider.core import JobState
from lavalog.controller.decider.core.settled import JobStates

CHECKPOINT_KEY = "__checkpoint__"


class JobSnapshot(msgspec.Struct, frozen=True, tag="job"):
    offset: int
    state: JobState


class SettledJobSnapshot(msgspec.Struct, frozen=True, tag="settled"):
    """A settled job: its state frozen (`settled.freeze`)."""

    offset: int
    frozen: bytes


class Checkpoint(msgspec.Struct, frozen=True, tag="checkpoint"):
    #: where a reader that cannot read settled records replays from (see the module)
    offset: int
    #: the input offset the snapshot was taken at; None in a checkpoint written before
    #: settled records (then it is `offset`)
    taken_at: int | None = None

    @classmethod
    def at(cls, offset: int, *, settled: bool) -> Checkpoint:
        """The checkpoint of a snapshot taken at `offset`, of a partition that holds
        settled records on the topic or not."""
        return cls(offset=0 if settled else offset, taken_at=offset)

    @property
    def replay_from(self) -> int:
        return self.offset if self.taken_at is None else self.taken_at


SnapshotRecord = JobSnapshot | SettledJobSnapshot | Checkpoint

_encoder = msgspec.json.Encoder()
_decoder: msgspec.json.Decoder[SnapshotRecord] = msgspec.json.Decoder(SnapshotRecord)


def encode_record(record: SnapshotRecord) -> bytes:
    return _encoder.encode(record)


def decode_record(data: bytes) -> SnapshotRecord:
    return _decoder.decode(data)


class Restored(msgspec.Struct):
    """What a partition's snapshot records add up to."""

    #: the input offset to replay from
    checkpoint: int = 0
    states: JobStates = msgspec.field(default_factory=JobStates)
    #: per job, the input offset its state already reflects (skip events before it)
    reflects: dict[str, int] = {}
    #: records that were not snapshots (someone else's bytes on the topic), left out
    skipped: int = 0


def restore(records: Iterable[tuple[str, bytes | None]]) -> Restored:
    """Fold `(key, value)` records in log order; a None value (tombstone) forgets the job."""
    restored = Restored()
    for key, value in records:
        if value is None:
            restored.states.pop(key, None)
            restored.reflects.pop(key, None)
            continue
        try:
            record = decode_record(value)
        except msgspec.DecodeError:
            # not ours: a job keeps its last good snapshot, and replay covers the rest
            restored.skipped += 1
            continue
        if isinstance(record, Checkpoint):
            restored.checkpoint = record.replay_from
            continue
        if isinstance(record, SettledJobSnapshot):
            restored.states.put_frozen(key, record.frozen)
        else:
            restored.states[key] = record.state
        restored.reflects[key] = record.offset
    return restored
