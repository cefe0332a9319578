"""The projections store: written in batches, positions in the same transaction.

The database is a SQLite file (the default) or PostgreSQL (`database`, `locations`).
Each batch is one transaction holding the raw events, the refreshed job rows and the
next offset of every source partition it read. A crash before the commit leaves the
store as it was, so the runner resumes from the stored positions and applies the batch
again: nothing is lost and, the positions matching the data, nothing is doubled. A
duplicate event (the same id delivered again, which at-least-once producers do) is
recognised by the primary key and ignored.

A bulk load (a rebuild into a fresh file, swapped in only when complete) trades the
per-batch job rows for speed: a job's row is written when the job first appears (which
fixes its incarnation number) and when its history leaves memory, that is when a batch
does not touch it, and the rest when the store is closed. Rewriting every touched job
row at every commit otherwise costs more than the events themselves, and holding every
history until the end costs the memory. Its SQL runs in a child process
(`tables_process`), which inserts a part of a batch while this process decodes the
next (a file's batches come undecoded: `projections.core.feed.Batch`) and folds the one
before. A bulk load that fails is thrown away.

The store is synchronous and single-writer (opening a second writer of a PostgreSQL
store raises `NotLeader`); async callers run `apply` in a thread.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import msgspec

from lavalog.events.codec import LogEvent
from lavalog.projections.core.feed import Applied, Batch, Sourced
from lavalog.projections.core.fold import new_history, record
from lavalog.projections.core.history import JobHistory
from lavalog.projections.core.rows import (
    INDEXED_TYPES,
    ActionRow,
    FailureRow,
    action_row,
    failure_row,
)
from lavalog.projections.core.summary import summarize
from lavalog.projections.service.store.database import Location
from lavalog.projections.service.store.locations import location_of
from lavalog.projections.service.store.sqlite import FILE_NAME
from lavalog.projections.service.store.tables import JobRow, Tables, Writes
from lavalog.projections.service.store.tables_process import TablesProcess

#: Events sent to a bulk load's writer process at a time: it inserts one part while this
#: process folds the one before.
PART = 500
#: Parts sent ahead of the one being folded (a few: each waits in a pipe).
AHEAD = 2
#: Jobs below which the planner's statistics are not refreshed as jobs arrive (a small
#: store's plans do not depend on them).
MEASURE_FROM_JOBS = 1_000

_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(JobHistory)


def store_path(state_dir: Path) -> Path:
    return state_dir / FILE_NAME


class Store:
    """The writer of one store."""

    def __init__(
        self,
        location: Location | Path | str,
        *,
        retention: float | None = None,
        cache_size: int = 50_000,
        durable: bool = True,
        before_commit: Callable[[], None] | None = None,
    ) -> None:
        """`retention`: seconds of log time after which a finished job is removed (None:
        keep). `durable`: see `connect`. `before_commit` runs just before each commit:
        tests crash there. Raises `NotLeader` if another process writes the store."""
        self.location = location_of(location)
        #: a bulk load (not durable, nothing pruned): written by a child process, job
        #: rows lazily (see above), the read indexes built when closed
        self._bulk = not durable and retention is None
        kind = TablesProcess if self._bulk else Tables
        self._tables = kind(self.location, durable=durable, read_indexes=not self._bulk)
        #: bulk load: uids of cached histories whose job row lags behind them
        self._unsaved: set[str] = set()
        #: bulk load: uids of the jobs that have a row
        self._rows = set(self._tables.job_uids()) if self._bulk else None
        self._failed = False
        self._retention = retention
        self._cache_size = cache_size
        self._before_commit = before_commit
        self._cache: dict[str, JobHistory] = {}
        self._pruned: set[str] = set()
        self._log_time = 0.0
        self._lock = threading.Lock()
        #: jobs when the planner's statistics were last refreshed, and jobs seen since
        self._jobs_measured = 0
        self._new_jobs = 0
        self._reload()
        if not self._bulk:
            self._refresh_statistics()

    def _reload(self) -> None:
        """Forget what memory holds beyond the committed store (after a rollback)."""
        self._cache.clear()
        self._unsaved.clear()
        self._pruned = set(self._tables.pruned())
        self._log_time = self._tables.log_time()

    def close(self) -> None:
        """Close the store; a bulk load writes its remaining job rows and read indexes first."""
        with self._lock:
            try:
                if self._bulk and not self._failed:
                    self._tables.begin()
                    self._tables.write(
                        Writes(jobs=[_job_row(self._cache[u]) for u in self._unsaved])
                    )
                    self._tables.commit()
                    self._unsaved.clear()
                    self._tables.create_read_indexes()
                    self._tables.refresh_statistics()
            finally:
                self._tables.close(abandon=self._failed)

    def positions(self, source: str) -> dict[int, int]:
        """partition -> next offset to read, for one source."""
        with self._lock:
            return dict(self._tables.positions(source))

    def apply(self, batch: Sequence[Sourced]) -> list[Applied]:
        """Apply a batch in one transaction; returns the events that were new."""
        with self._lock:
            if self._failed:
                raise RuntimeError("a bulk load that failed is thrown away: start it again")
            try:
                self._tables.begin()
                applied = self._write(batch)
                if self._before_commit is not None:
                    self._before_commit()
                self._tables.commit()
            except BaseException:
                if self._bulk:  # its job rows lag behind the histories that are now lost
                    self._failed = True
                    raise
                self._tables.rollback()
                self._reload()  # the cached histories hold the rolled-back batch
                raise
            if not self._bulk:
                if len(self._cache) > self._cache_size:
                    for uid in list(self._cache)[: len(self._cache) // 2]:
                        del self._cache[uid]
                if self._new_jobs >= max(self._jobs_measured, MEASURE_FROM_JOBS):
                    self._refresh_statistics()
            return applied

    def _refresh_statistics(self) -> None:
        """Let the query planner measure the jobs again once their number has doubled
        (amortized: the measuring reads each job's index entries once per doubling)."""
        self._tables.refresh_statistics()
        self._jobs_measured = self._tables.job_count()
        self._new_jobs = 0

    def _write(self, items: Sequence[Sourced]) -> list[Applied]:
        batch = items if isinstance(items, Batch) else Batch.of(items)
        next_offsets = batch.next_offsets()
        if self._pruned:
            pruned = self._pruned
            batch = Batch.of(i for i in batch.decoded() if i.event.job_uid not in pruned)
        changes = _Changes()
        sent: deque[tuple[list[LogEvent], list[bytes]]] = deque()
        for start in range(0, len(batch), PART):  # the writer inserts while we decode and fold
            stop = start + PART
            events, raws = batch.events(start, stop), batch.raws[start:stop]
            self._tables.send_events(raws)
            sent.append((events, raws))
            if len(sent) > AHEAD:
                self._fold(*sent.popleft(), changes)
        while sent:
            self._fold(*sent.popleft(), changes)
        self._new_jobs += len(changes.created)
        saved = self._saved_lazily(changes) if self._bulk else changes.touched.values()
        self._tables.write(
            Writes(
                actions=changes.actions,
                failures=changes.failures,
                jobs=[_job_row(history) for history in saved],
                positions=[
                    (source, part, offset) for (source, part), offset in next_offsets.items()
                ],
            )
        )
        if self._retention is not None:
            self._prune(self._log_time - self._retention)
        return changes.applied

    def _fold(self, events: list[LogEvent], raws: list[bytes], changes: _Changes) -> None:
        """Fold the new events of a part whose insertion was sent (duplicates left out)."""
        seq, duplicates = self._tables.inserted()
        if duplicates:
            left_out = set(duplicates)
            kept = [i for i in range(len(events)) if i not in left_out]
            events, raws = [events[i] for i in kept], [raws[i] for i in kept]
        touched, cache, applied = changes.touched, self._cache, changes.applied
        log_time = self._log_time
        for event, raw in zip(events, raws, strict=True):
            seq += 1
            uid = event.job_uid
            history = touched.get(uid)
            if history is None:
                history = cache.get(uid) or self._stored(uid)
                if history is None:  # its first event
                    history = cache[uid] = new_history(event)
                    changes.created.add(uid)
                touched[uid] = history
            record(history, event)
            if type(event) in INDEXED_TYPES:
                if (action := action_row(event)) is not None:
                    changes.actions.append(action)
                elif (failure := failure_row(event)) is not None:
                    changes.failures.append(failure)
            applied.append(Applied(seq, event, raw))
            if event.time > log_time:
                log_time = event.time
        self._log_time = log_time

    def _saved_lazily(self, changes: _Changes) -> list[JobHistory]:
        """A bulk load's job rows to write now: those of the jobs that appeared (their
        incarnation numbers follow the log), and those of the histories this batch did not
        touch, which leave memory; the others' rows wait."""
        touched, created = changes.touched, changes.created
        saved = [touched[uid] for uid in created]
        assert self._rows is not None
        self._rows.update(created)
        self._unsaved.update(uid for uid in touched if uid not in created)
        for uid in [uid for uid in self._cache if uid not in touched]:
            history = self._cache.pop(uid)
            if uid in self._unsaved:
                self._unsaved.discard(uid)
                saved.append(history)
        return saved

    def _stored(self, uid: str) -> JobHistory | None:
        """The job's stored history, now cached. A bulk load asks only for jobs it wrote a
        row of (whose history left memory): its writer process answers after the parts
        sent ahead."""
        if self._rows is not None and uid not in self._rows:
            return None
        stored = self._tables.stored_history(uid)
        if stored is None:
            return None
        history = self._cache[uid] = _decoder.decode(stored)
        return history

    def _prune(self, before: float) -> None:
        """Forget the jobs that ended before `before` (log time)."""
        uids = self._tables.prune(before)
        self._pruned.update(uids)
        for uid in uids:
            self._cache.pop(uid, None)


class _Changes:
    """What folding a batch gives: the new events, index rows, the histories touched."""

    def __init__(self) -> None:
        self.applied: list[Applied] = []
        self.actions: list[ActionRow] = []
        self.failures: list[FailureRow] = []
        self.touched: dict[str, JobHistory] = {}
        #: uids of the jobs seen for the first time
        self.created: set[str] = set()


def _job_row(history: JobHistory) -> JobRow:
    row = summarize(history)
    return (
        row.uid,
        row.key,
        row.namespace,
        row.name,
        row.key,
        row.queue,
        row.phase,
        row.reason,
        row.submitted,
        row.updated,
        row.finished,
        row.deleted,
        row.finished if row.finished is not None else row.deleted,
        row.retry_count,
        row.version,
        row.queue_wait,
        row.run_time,
        row.running_since,
        row.pods,
        row.restarts,
        _encoder.encode(history),
    )


def load(store: Store, events: Iterable[Sourced], *, batch_size: int = 5_000) -> int:
    """Apply events in batches (a file, a test's list); returns how many were new."""
    applied = 0
    batch: list[Sourced] = []
    for item in events:
        batch.append(item)
        if len(batch) >= batch_size:
            applied += len(store.apply(batch))
            batch.clear()
    if batch:
        applied += len(store.apply(batch))
    return applied
