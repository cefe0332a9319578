"""The projections store: SQLite, written in batches, positions in the same transaction.

Each batch is one transaction holding the raw events, the refreshed job rows and the
next offset of every source partition it read. A crash before the commit leaves the
file as it was, so the runner resumes from the stored positions and applies the batch
again: nothing is lost and, the positions matching the data, nothing is doubled. A
duplicate event (the same id delivered again, which at-least-once producers do) is
recognised by the primary key and ignored.

A bulk load (a rebuild into a fresh file, swapped in only when complete) trades the
per-batch job rows for speed: a job's row is written when the job first appears (which
fixes its incarnation number) and when its history leaves memory, that is when a batch
does not touch it, and the rest when the store is closed. Rewriting every touched job
row at every commit otherwise costs more than the events themselves, and holding every
history until the end costs the memory. A bulk load that fails is thrown away.

The store is synchronous and single-writer; async callers run `apply` in a thread.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import msgspec

from events.codec import LogEvent
from events.observations import Observation
from projections import schema
from projections.feed import Applied, Sourced
from projections.history import JobHistory, new_history, record
from projections.rows import ActionRow, FailureRow, action_row, failure_row
from projections.summary import summarize

#: The store's file inside the state directory.
FILE_NAME = "projections.sqlite"
#: Page size of a new file (an existing one keeps its own): with SQLite's default 4 KiB,
#: a page holds a handful of events and the event id index splits pages all the time.
PAGE_SIZE = 16 * 1024
#: SQLite's page cache per connection: the indexes of a million events stay in memory.
CACHE_KIB = 64 * 1024

_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(JobHistory)

_INSERT_EVENT = (
    "INSERT OR IGNORE INTO events (id, kind, type, key, job_uid, time, body)"
    " VALUES (?, ?, ?, ?, ?, ?, ?)"
)

_UPSERT_JOB = """
INSERT INTO jobs (uid, key, namespace, name, incarnation, queue, phase, reason, submitted,
    updated, finished, deleted, ended, retry_count, version, queue_wait, run_time,
    running_since, pods, restarts, history)
VALUES (?, ?, ?, ?,
    (SELECT COALESCE(MAX(incarnation), 0) + 1 FROM jobs WHERE key = ?),
    ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (uid) DO UPDATE SET queue = excluded.queue, phase = excluded.phase,
    reason = excluded.reason, submitted = excluded.submitted, updated = excluded.updated,
    finished = excluded.finished, deleted = excluded.deleted, ended = excluded.ended,
    retry_count = excluded.retry_count, version = excluded.version,
    queue_wait = excluded.queue_wait, run_time = excluded.run_time,
    running_since = excluded.running_since, pods = excluded.pods,
    restarts = excluded.restarts, history = excluded.history
"""


def store_path(state_dir: Path) -> Path:
    return state_dir / FILE_NAME


def connect(path: Path, *, durable: bool = True) -> sqlite3.Connection:
    """A connection in WAL mode, so that readers never wait for the writer.

    Not `durable`: the rollback journal in memory and no fsync, for a store that is
    thrown away if the process dies (a rebuild, which swaps its file in when complete).
    """
    db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    db.execute(f"PRAGMA page_size = {PAGE_SIZE}")
    db.execute(f"PRAGMA cache_size = -{CACHE_KIB}")
    if durable:
        db.execute("PRAGMA journal_mode = WAL")
        db.execute("PRAGMA synchronous = NORMAL")
    else:
        db.execute("PRAGMA journal_mode = MEMORY")
        db.execute("PRAGMA synchronous = OFF")
    return db


class Store:
    """The writer of one store file."""

    def __init__(
        self,
        path: Path,
        *,
        retention: float | None = None,
        cache_size: int = 50_000,
        durable: bool = True,
        before_commit: Callable[[], None] | None = None,
    ) -> None:
        """`retention`: seconds of log time after which a finished job is removed (None:
        keep). `durable`: see `connect`. `before_commit` runs just before each commit:
        tests crash there."""
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._db = connect(path, durable=durable)
        #: a bulk load (not durable, nothing pruned): job rows written lazily (see above),
        #: the read indexes built when closed
        self._bulk = not durable and retention is None
        #: bulk load: uids of cached histories whose job row lags behind them
        self._unsaved: set[str] = set()
        self._failed = False
        schema.create(self._db, read_indexes=not self._bulk)
        self._retention = retention
        self._cache_size = cache_size
        self._before_commit = before_commit
        self._cache: dict[str, JobHistory] = {}
        self._pruned: set[str] = set()
        self._log_time = 0.0
        self._lock = threading.Lock()
        self._reload()

    def _reload(self) -> None:
        """Forget what memory holds beyond the committed file (after a rollback)."""
        self._cache.clear()
        self._unsaved.clear()
        self._pruned = {row[0] for row in self._db.execute("SELECT uid FROM pruned")}
        row = self._db.execute("SELECT MAX(updated) FROM jobs").fetchone()
        self._log_time = row[0] or 0.0

    def close(self) -> None:
        """Close the file; a bulk load writes its remaining job rows and read indexes first."""
        with self._lock:
            if self._bulk and not self._failed:
                cursor = self._db.cursor()
                cursor.execute("BEGIN IMMEDIATE")
                for uid in self._unsaved:
                    self._save(cursor, self._cache[uid])
                cursor.execute("COMMIT")
                self._unsaved.clear()
                schema.create_read_indexes(self._db)
            self._db.close()

    def positions(self, source: str) -> dict[int, int]:
        """partition -> next offset to read, for one source."""
        with self._lock:
            rows = self._db.execute(
                "SELECT partition, next_offset FROM positions WHERE source = ?", (source,)
            ).fetchall()
        return {partition: offset for partition, offset in rows}

    def apply(self, batch: Sequence[Sourced]) -> list[Applied]:
        """Apply a batch in one transaction; returns the events that were new."""
        with self._lock:
            if self._failed:
                raise RuntimeError("a bulk load that failed is thrown away: start it again")
            cursor = self._db.cursor()
            cursor.execute("BEGIN IMMEDIATE")
            try:
                applied = self._write(cursor, batch)
                if self._before_commit is not None:
                    self._before_commit()
                cursor.execute("COMMIT")
            except BaseException:
                cursor.execute("ROLLBACK")
                self._reload()  # the cached histories hold the rolled-back batch
                self._failed = self._bulk  # and a bulk load's job rows lag behind them
                raise
            if not self._bulk and len(self._cache) > self._cache_size:
                for uid in list(self._cache)[: len(self._cache) // 2]:
                    del self._cache[uid]
            return applied

    def _write(self, cursor: sqlite3.Cursor, batch: Sequence[Sourced]) -> list[Applied]:
        next_offsets = {
            (position.source, position.partition): position.offset + 1
            for _, _, position in batch
        }
        kept = [item for item in batch if item.event.job_uid not in self._pruned]
        applied: list[Applied] = []
        actions: list[ActionRow] = []
        failures: list[FailureRow] = []
        touched: dict[str, JobHistory] = {}
        created: set[str] = set()
        for (event, raw, _), seq in zip(kept, self._insert_events(cursor, kept), strict=True):
            if seq is None:
                continue  # a duplicate
            history = touched.get(event.job_uid)
            if history is None:
                history = touched[event.job_uid] = self._history(cursor, event, created)
            record(history, event)
            if (action := action_row(event)) is not None:
                actions.append(action)
            elif (failure := failure_row(event)) is not None:
                failures.append(failure)
            applied.append(Applied(seq, event, raw))
            if event.time > self._log_time:
                self._log_time = event.time
        cursor.executemany("INSERT OR IGNORE INTO actions VALUES (?, ?, ?, ?, ?, ?, ?, ?)", actions)
        cursor.executemany("INSERT OR IGNORE INTO pod_failures VALUES (?, ?, ?, ?, ?, ?)", failures)
        if self._bulk:
            self._save_lazily(cursor, touched, created)
        else:
            for history in touched.values():
                self._save(cursor, history)
        cursor.executemany(
            "INSERT INTO positions (source, partition, next_offset) VALUES (?, ?, ?)"
            " ON CONFLICT (source, partition) DO UPDATE SET next_offset = excluded.next_offset",
            [(source, partition, offset) for (source, partition), offset in next_offsets.items()],
        )
        if self._retention is not None:
            self._prune(cursor, self._log_time - self._retention)
        return applied

    @staticmethod
    def _insert_events(cursor: sqlite3.Cursor, batch: Sequence[Sourced]) -> list[int | None]:
        """Store the batch's events; the seq of each new one, None for a duplicate.

        One statement for the batch: rows get seq numbers in batch order, after the
        largest one stored, and duplicates get none, so the new ones are read back only
        when the count says some were duplicates."""
        if not batch:
            return []
        last: int = cursor.execute("SELECT COALESCE(MAX(seq), 0) FROM events").fetchone()[0]
        cursor.executemany(_INSERT_EVENT, [_event_row(event, raw) for event, raw, _ in batch])
        if cursor.rowcount == len(batch):
            return list(range(last + 1, last + 1 + len(batch)))
        new = cursor.execute("SELECT seq, id FROM events WHERE seq > ? ORDER BY seq", (last,))
        seqs: list[int | None] = []
        upcoming = next(new, None)
        for event, _, _ in batch:
            if upcoming is not None and upcoming[1] == event.id:
                seqs.append(upcoming[0])
                upcoming = next(new, None)
            else:
                seqs.append(None)
        return seqs

    def _save_lazily(
        self, cursor: sqlite3.Cursor, touched: dict[str, JobHistory], created: set[str]
    ) -> None:
        """A bulk load's job rows: written for the jobs that appeared (their incarnation
        numbers follow the log), and for the histories this batch did not touch, which
        leave memory; the others' rows wait."""
        for uid, history in touched.items():
            if uid in created:
                self._save(cursor, history)
            else:
                self._unsaved.add(uid)
        for uid in [uid for uid in self._cache if uid not in touched]:
            history = self._cache.pop(uid)
            if uid in self._unsaved:
                self._unsaved.discard(uid)
                self._save(cursor, history)

    def _history(self, cursor: sqlite3.Cursor, event: LogEvent, created: set[str]) -> JobHistory:
        """The job's history: cached, else stored, else new (its uid then added to `created`)."""
        history = self._cache.get(event.job_uid)
        if history is None:
            row = cursor.execute(
                "SELECT history FROM jobs WHERE uid = ?", (event.job_uid,)
            ).fetchone()
            if row is not None:
                history = _decoder.decode(row[0])
            else:
                history = new_history(event)
                created.add(event.job_uid)
            self._cache[event.job_uid] = history
        return history

    @staticmethod
    def _save(cursor: sqlite3.Cursor, history: JobHistory) -> None:
        row = summarize(history)
        cursor.execute(
            _UPSERT_JOB,
            (
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
            ),
        )

    def _prune(self, cursor: sqlite3.Cursor, before: float) -> None:
        """Forget the jobs that ended before `before` (log time)."""
        uids = [row[0] for row in cursor.execute("SELECT uid FROM jobs WHERE ended < ?", (before,))]
        if not uids:
            return
        for table, column in _PRUNED_TABLES:
            cursor.executemany(f"DELETE FROM {table} WHERE {column} = ?", [(u,) for u in uids])
        cursor.executemany(
            "INSERT OR IGNORE INTO pruned (uid, time) VALUES (?, ?)",
            [(uid, before) for uid in uids],
        )
        self._pruned.update(uids)
        for uid in uids:
            self._cache.pop(uid, None)


def _event_row(event: LogEvent, raw: bytes) -> tuple[str, str, str, str, str, float, bytes]:
    kind = "observation" if isinstance(event, Observation) else "decision"
    return (event.id, kind, type(event).__name__, event.key, event.job_uid, event.time, raw)


_PRUNED_TABLES = (
    ("events", "job_uid"),
    ("actions", "job_uid"),
    ("pod_failures", "job_uid"),
    ("jobs", "uid"),
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
