"""The projections store: SQLite, written in batches, positions in the same transaction.

Each batch is one transaction holding the raw events, the refreshed job rows and the
next offset of every source partition it read. A crash before the commit leaves the
file as it was, so the runner resumes from the stored positions and applies the batch
again: nothing is lost and, the positions matching the data, nothing is doubled. A
duplicate event (the same id delivered again, which at-least-once producers do) is
recognised by the primary key and ignored.

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
#: SQLite's page cache per connection: the indexes of a million events stay in memory.
CACHE_KIB = 64 * 1024

_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(JobHistory)

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
        #: a bulk load (not durable, nothing pruned) builds the read indexes when closed
        self._bulk = not durable and retention is None
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
        self._pruned = {row[0] for row in self._db.execute("SELECT uid FROM pruned")}
        row = self._db.execute("SELECT MAX(updated) FROM jobs").fetchone()
        self._log_time = row[0] or 0.0

    def close(self) -> None:
        with self._lock:
            if self._bulk:
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
                raise
            if len(self._cache) > self._cache_size:
                for uid in list(self._cache)[: len(self._cache) // 2]:
                    del self._cache[uid]
            return applied

    def _write(self, cursor: sqlite3.Cursor, batch: Sequence[Sourced]) -> list[Applied]:
        applied: list[Applied] = []
        actions: list[ActionRow] = []
        failures: list[FailureRow] = []
        dirty: dict[str, JobHistory] = {}
        next_offsets: dict[tuple[str, int], int] = {}
        for event, raw, position in batch:
            next_offsets[position.source, position.partition] = position.offset + 1
            if event.job_uid in self._pruned:
                continue
            cursor.execute(
                "INSERT OR IGNORE INTO events (id, kind, type, key, job_uid, time, body)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    event.id,
                    "observation" if isinstance(event, Observation) else "decision",
                    type(event).__name__,
                    event.key,
                    event.job_uid,
                    event.time,
                    raw,
                ),
            )
            if cursor.rowcount == 0:
                continue
            seq = cursor.lastrowid
            assert seq is not None
            history = dirty.get(event.job_uid) or self._history(cursor, event)
            record(history, event)
            dirty[event.job_uid] = history
            if (action := action_row(event)) is not None:
                actions.append(action)
            elif (failure := failure_row(event)) is not None:
                failures.append(failure)
            applied.append(Applied(seq, event, raw))
            if event.time > self._log_time:
                self._log_time = event.time
        cursor.executemany("INSERT OR IGNORE INTO actions VALUES (?, ?, ?, ?, ?, ?, ?, ?)", actions)
        cursor.executemany("INSERT OR IGNORE INTO pod_failures VALUES (?, ?, ?, ?, ?, ?)", failures)
        for history in dirty.values():
            self._save(cursor, history)
        cursor.executemany(
            "INSERT INTO positions (source, partition, next_offset) VALUES (?, ?, ?)"
            " ON CONFLICT (source, partition) DO UPDATE SET next_offset = excluded.next_offset",
            [(source, partition, offset) for (source, partition), offset in next_offsets.items()],
        )
        if self._retention is not None:
            self._prune(cursor, self._log_time - self._retention)
        return applied

    def _history(self, cursor: sqlite3.Cursor, event: LogEvent) -> JobHistory:
        history = self._cache.get(event.job_uid)
        if history is None:
            row = cursor.execute(
                "SELECT history FROM jobs WHERE uid = ?", (event.job_uid,)
            ).fetchone()
            history = _decoder.decode(row[0]) if row is not None else new_history(event)
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
