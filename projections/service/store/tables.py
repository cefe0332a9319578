"""The store's writes in SQL: one connection and the statements the store runs, no folding.

`Store` runs them on a connection of its own process; a bulk load runs the same methods
in a child process (`tables_process`). The statements are shared by SQLite and
PostgreSQL (`database`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import Any, NamedTuple, get_args

import msgspec

from lavalog.events.observations import AnyObservation
from lavalog.projections.service.store import schema
from lavalog.projections.service.store.database import EventRow, Inserted, Location, NotLeader

#: the `jobs` columns from `uid` to `history`, with the key once more (for `incarnation`)
JobRow = tuple[Any, ...]
#: (source, partition, next_offset)
PositionRow = tuple[str, int, int]


class Writes(NamedTuple):
    """What a transaction writes besides its events: index rows (duplicates ignored), job
    rows (inserted or updated) and the sources' next offsets."""

    actions: Sequence[Sequence[Any]] = ()
    failures: Sequence[Sequence[Any]] = ()
    jobs: Sequence[JobRow] = ()
    positions: Sequence[PositionRow] = ()


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

_PRUNED_TABLES = (
    ("events", "job_uid"),
    ("actions", "job_uid"),
    ("pod_failures", "job_uid"),
    ("jobs", "uid"),
)


class _Columns(msgspec.Struct):
    """What the `events` table has columns for, read from an event's JSON."""

    type: str
    id: str
    key: str
    job_uid: str
    time: float


_columns = msgspec.json.Decoder(_Columns)
_OBSERVATIONS = frozenset(kind.__struct_config__.tag for kind in get_args(AnyObservation))


def _event_row(event: bytes | bytearray) -> EventRow:
    """(id, kind, type, key, job_uid, time, body) of an event's JSON."""
    columns = _columns.decode(event)
    kind = "observation" if columns.type in _OBSERVATIONS else "decision"
    return (columns.id, kind, columns.type, columns.key, columns.job_uid, columns.time, event)


class Tables:
    """The store's statements, on a connection of this process."""

    def __init__(self, location: Location, *, durable: bool, read_indexes: bool) -> None:
        """Raises `NotLeader` if another process writes the store."""
        self._db = location.connect(durable=durable)
        try:  # the writer creates the tables: a replica that follows only tries to lead
            if not self._db.try_lead():
                raise NotLeader(f"another lavalog process writes the projections store {location}")
            schema.create(self._db, read_indexes=read_indexes)
        except BaseException:
            self._db.close()
            raise
        self._inserted: deque[Inserted] = deque()

    def begin(self) -> None:
        self._db.begin()

    def commit(self) -> None:
        self._db.commit()

    def rollback(self) -> None:
        self._db.rollback()

    def positions(self, source: str) -> list[tuple[int, int]]:
        """(partition, next offset) of each partition of one source."""
        return [
            (partition, offset)
            for partition, offset in self._db.rows(
                "SELECT partition, next_offset FROM positions WHERE source = ?", (source,)
            )
        ]

    def pruned(self) -> list[str]:
        return [row[0] for row in self._db.rows("SELECT uid FROM pruned")]

    def job_uids(self) -> list[str]:
        return [row[0] for row in self._db.rows("SELECT uid FROM jobs")]

    def job_count(self) -> int:
        return int(self._db.rows("SELECT COUNT(*) FROM jobs")[0][0])

    def log_time(self) -> float:
        """The latest event time of the stored jobs (0 when there are none)."""
        return float(self._db.rows("SELECT MAX(updated) FROM jobs")[0][0] or 0.0)

    def insert_events(self, events: Sequence[bytes | bytearray]) -> Inserted:
        """Store events (each its JSON); duplicates (an id stored already) are left out.

        The columns are read from the JSON here rather than sent along: in a writer
        process, that costs less than shipping them. The answer is the largest seq stored
        before (the new rows get the following ones, in their order) and the duplicates'
        places."""
        if not events:
            return 0, []
        return self._db.insert_events([_event_row(event) for event in events])

    def send_events(self, events: Sequence[bytes]) -> None:
        """`insert_events`, its answer taken later with `inserted` (a child process takes
        the next events meanwhile: `tables_process`)."""
        self._inserted.append(self.insert_events(events))

    def inserted(self) -> Inserted:
        """The answer to the oldest `send_events` not yet taken."""
        return self._inserted.popleft()

    def stored_history(self, uid: str) -> bytes | None:
        """The folded history (msgpack) of a job, if it has a row."""
        rows = self._db.rows("SELECT history FROM jobs WHERE uid = ?", (uid,))
        return bytes(rows[0][0]) if rows else None

    def write(self, writes: Writes) -> None:
        db = self._db
        db.many(f"INSERT INTO actions VALUES ({_marks(8)}) ON CONFLICT DO NOTHING", writes.actions)
        db.many(
            f"INSERT INTO pod_failures VALUES ({_marks(6)}) ON CONFLICT DO NOTHING",
            writes.failures,
        )
        db.many(_UPSERT_JOB, writes.jobs)
        db.many(
            "INSERT INTO positions (source, partition, next_offset) VALUES (?, ?, ?)"
            " ON CONFLICT (source, partition) DO UPDATE SET next_offset = excluded.next_offset",
            writes.positions,
        )

    def prune(self, before: float) -> list[str]:
        """Remove the jobs that ended before `before` (log time); returns their uids."""
        db = self._db
        uids = [row[0] for row in db.rows("SELECT uid FROM jobs WHERE ended < ?", (before,))]
        if uids:
            for table, column in _PRUNED_TABLES:
                db.many(f"DELETE FROM {table} WHERE {column} = ?", [(u,) for u in uids])
            db.many(
                "INSERT INTO pruned (uid, time) VALUES (?, ?) ON CONFLICT DO NOTHING",
                [(uid, before) for uid in uids],
            )
        return uids

    def create_read_indexes(self) -> None:
        schema.create_read_indexes(self._db)

    def refresh_statistics(self) -> None:
        schema.refresh_statistics(self._db)

    def close(self, *, abandon: bool = False) -> None:
        """`abandon`: the caller gives the store up (same here: nothing is pending)."""
        self._db.close()


def _marks(count: int) -> str:
    return ", ".join("?" * count)
