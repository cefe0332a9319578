"""The read side of the store: what the API, the CLI and `/metrics` ask of it.

A reader has its own connection (SQLite's WAL, like PostgreSQL, lets it read while the
writer writes) and a lock, since the API calls it from worker threads. Its SQL is
shared by both databases (`database`).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec

from lavalog.events.volcano.api import JobPhase
from lavalog.projections.core.history import JobHistory
from lavalog.projections.core.summary import RESTART_ACTIONS, JobSummary
from lavalog.projections.core.timeline import Timeline, build_timeline
from lavalog.projections.service.store.database import Location
from lavalog.projections.service.store.locations import location_of

_history_decoder = msgspec.msgpack.Decoder(JobHistory)
_SUMMARY_COLUMNS = ", ".join(JobSummary.__struct_fields__)
#: the list's order, newest first (the index jobs_by_sort is on it: change both together)
_SORT = "COALESCE(submitted, updated)"
#: Phases whose reason counts as a job failure reason.
FAILED_PHASES = (JobPhase.FAILED, JobPhase.ABORTED, JobPhase.TERMINATED)
#: the most jobs one page of the job list holds
MAX_PAGE = 1_000
#: the phases a job list can be filtered by
PHASES = tuple(JobPhase)


class JobFilter(msgspec.Struct, frozen=True, kw_only=True):
    """Which jobs a list shows; `since`/`until` keep jobs alive at some point in between."""

    namespace: str = ""
    queue: str = ""
    phases: tuple[str, ...] = ()
    since: float | None = None
    until: float | None = None
    #: a substring of `namespace/name`
    search: str = ""
    #: only these namespaces (what the caller may read); None: every namespace
    readable: frozenset[str] | None = None

    def __post_init__(self) -> None:
        unknown = [phase for phase in self.phases if phase not in PHASES]
        if unknown:
            raise ValueError(
                f"phase: no phase {', '.join(map(repr, unknown))}; one of {', '.join(PHASES)}"
            )

    def where(self) -> tuple[str, list[Any]]:
        clauses: list[str] = []
        values: list[Any] = []
        if self.namespace:
            clauses.append("namespace = ?")
            values.append(self.namespace)
        if self.readable is not None:
            if not self.readable:
                clauses.append("1 = 0")
            else:
                clauses.append(f"namespace IN ({', '.join('?' for _ in self.readable)})")
                values.extend(sorted(self.readable))
        if self.queue:
            clauses.append("queue = ?")
            values.append(self.queue)
        if self.phases:
            clauses.append(f"phase IN ({', '.join('?' for _ in self.phases)})")
            values.extend(self.phases)
        if self.since is not None:
            clauses.append("(ended IS NULL OR ended >= ?)")
            values.append(self.since)
        if self.until is not None:
            clauses.append(f"{_SORT} <= ?")
            values.append(self.until)
        if self.search:
            clauses.append("key LIKE ? ESCAPE '\\'")
            escaped = self.search.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
            values.append(f"%{escaped}%")
        return (" WHERE " + " AND ".join(clauses) if clauses else ""), values


class Page(msgspec.Struct, frozen=True, kw_only=True):
    """Jobs newest first; `next` is the cursor of the following page (None: last page)."""

    jobs: tuple[JobSummary, ...]
    total: int
    next: str | None


class StoredEvent(msgspec.Struct, frozen=True, kw_only=True):
    seq: int
    kind: str
    type: str
    body: bytes


class Histogram(msgspec.Struct, frozen=True, kw_only=True):
    """Cumulative counts per upper bound, the count and the sum: Prometheus' shape."""

    buckets: tuple[tuple[float, int], ...]
    count: int
    total: float


class Queries:
    """Read-only questions to one store."""

    def __init__(self, location: Location | Path | str) -> None:
        self._location = location_of(location)
        self._db = self._location.connect()
        self._lock = threading.Lock()

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def _all(self, sql: str, values: Sequence[Any] = ()) -> list[Any]:
        """The rows of a query; a connection lost since the last one (a PostgreSQL server
        restarted) is replaced once: a reader holds no transaction or lock to lose."""
        with self._lock:
            try:
                return self._db.rows(sql, values)
            except Exception:
                if not self._db.broken():
                    raise
            self._db.close()
            self._db = self._location.connect()
            return self._db.rows(sql, values)

    def jobs(self, where: JobFilter, *, limit: int = 50, after: str | None = None) -> Page:
        clause, values = where.where()
        total = self._all(f"SELECT COUNT(*) FROM jobs{clause}", values)[0][0]
        if after is not None:
            sort_value, _, uid = after.partition("|")
            clause += " AND " if clause else " WHERE "
            clause += f"({_SORT}, uid) < (?, ?)"
            values = [*values, float(sort_value), uid]
        rows = self._all(
            f"SELECT {_SUMMARY_COLUMNS}, {_SORT} FROM jobs{clause}"
            f" ORDER BY {_SORT} DESC, uid DESC LIMIT ?",
            [*values, limit + 1],
        )
        jobs = tuple(_summary(row) for row in rows[:limit])
        more = len(rows) > limit
        next_cursor = f"{rows[limit - 1][-1]!r}|{jobs[-1].uid}" if more and jobs else None
        return Page(jobs=jobs, total=total, next=next_cursor)

    def incarnations(self, key: str) -> list[JobSummary]:
        """Every job ever called `key`, oldest first."""
        rows = self._all(
            f"SELECT {_SUMMARY_COLUMNS} FROM jobs WHERE key = ? ORDER BY incarnation", (key,)
        )
        return [_summary(row) for row in rows]

    def timeline(self, key: str, *, incarnation: int | None = None) -> Timeline | None:
        """The timeline of `key`'s latest incarnation, or of the one numbered `incarnation`."""
        sql = "SELECT history, incarnation FROM jobs WHERE key = ?"
        values: list[Any] = [key]
        if incarnation is not None:
            sql += " AND incarnation = ?"
            values.append(incarnation)
        rows = self._all(sql + " ORDER BY incarnation DESC LIMIT 1", values)
        if not rows:
            return None
        return build_timeline(_history_decoder.decode(rows[0][0]), incarnation=rows[0][1])

    def log_time(self) -> float | None:
        """The log's "now": the time of the latest event stored, whatever its job.

        An open interval (a job still running) is drawn up to here, on the log's clock
        like everything else on a timeline, not the reader's: a recording then ends
        where it ends, and a skewed browser clock changes nothing.
        """
        rows = self._all("SELECT MAX(updated) FROM jobs", [])
        return rows[0][0] if rows else None

    def events(self, key: str, *, after: int = 0, uid: str | None = None) -> list[StoredEvent]:
        """The raw events of every incarnation of `key` (or one uid), in log order."""
        if uid is None:
            sql = (
                "SELECT seq, kind, type, body FROM events WHERE job_uid IN"
                " (SELECT uid FROM jobs WHERE key = ?) AND seq > ? ORDER BY seq"
            )
            values: tuple[Any, ...] = (key, after)
        else:
            sql = "SELECT seq, kind, type, body FROM events WHERE job_uid = ? AND seq > ?"
            sql += " ORDER BY seq"
            values = (uid, after)
        return [
            StoredEvent(seq=seq, kind=kind, type=type_, body=body)
            for seq, kind, type_, body in self._all(sql, values)
        ]

    def bodies(self, uid: str, *, kind: str, types: Sequence[str]) -> list[bytes]:
        """The bytes of incarnation `uid`'s events of `kind` ('observation' or 'decision')
        and of these `types`, in log order."""
        marks = ", ".join("?" for _ in types)
        rows = self._all(
            "SELECT body FROM events WHERE job_uid = ? AND kind = ?"
            f" AND type IN ({marks}) ORDER BY seq",
            (uid, kind, *types),
        )
        return [bytes(body) for (body,) in rows]

    def log(self, after: int, limit: int) -> list[StoredEvent]:
        """The events stored after sequence number `after`, in log order (a follower's)."""
        return [
            StoredEvent(seq=seq, kind=kind, type=type_, body=bytes(body))
            for seq, kind, type_, body in self._all(
                "SELECT seq, kind, type, body FROM events WHERE seq > ? ORDER BY seq LIMIT ?",
                (after, limit),
            )
        ]

    def last_seq(self) -> int:
        """The sequence number of the last event stored (0: none)."""
        last: int = self._all("SELECT COALESCE(MAX(seq), 0) FROM events")[0][0]
        return last

    def namespaces(self) -> list[str]:
        """Every namespace with a job in the store."""
        return [row[0] for row in self._all("SELECT DISTINCT namespace FROM jobs")]

    def keys(self) -> list[str]:
        return [row[0] for row in self._all("SELECT DISTINCT key FROM jobs ORDER BY key")]

    def counts(self, where: JobFilter) -> dict[str, Any]:
        """Jobs by phase, by namespace, and by queue and phase, and the top failure reasons."""
        clause, values = where.where()
        by_phase = self._all(
            f"SELECT phase, COUNT(*) FROM jobs{clause} GROUP BY phase ORDER BY phase", values
        )
        by_namespace = self._all(
            f"SELECT namespace, COUNT(*) FROM jobs{clause} GROUP BY namespace ORDER BY namespace",
            values,
        )
        by_queue = self._all(
            f"SELECT queue, phase, COUNT(*) FROM jobs{clause} GROUP BY queue, phase"
            " ORDER BY queue, phase",
            values,
        )
        queues: dict[str, dict[str, int]] = {}
        for queue, phase, count in by_queue:
            queues.setdefault(queue, {})[phase] = count
        failed_clause = clause + (" AND " if clause else " WHERE ")
        failed_clause += f"phase IN ({', '.join('?' for _ in FAILED_PHASES)})"
        job_reasons = self._all(
            f"SELECT reason, COUNT(*) AS n FROM jobs{failed_clause}"
            " GROUP BY reason ORDER BY n DESC, reason LIMIT 10",
            [*values, *FAILED_PHASES],
        )
        # every pod failure's job has a row (retention removes both): without a filter,
        # count them all from their index rather than look each job up
        of_jobs = f" WHERE job_uid IN (SELECT uid FROM jobs{clause})" if clause else ""
        pod_reasons = self._all(
            f"SELECT reason, COUNT(*) AS n FROM pod_failures{of_jobs}"
            " GROUP BY reason ORDER BY n DESC, reason LIMIT 10",
            values,
        )
        return {
            "by_phase": dict(by_phase),
            "by_namespace": dict(by_namespace),
            "by_queue": queues,
            "job_failure_reasons": [{"reason": r, "count": n} for r, n in job_reasons],
            "pod_failure_reasons": [{"reason": r, "count": n} for r, n in pod_reasons],
        }

    def jobs_by_phase_and_queue(self) -> list[tuple[str, str, int]]:
        return [
            (phase, queue, count)
            for phase, queue, count in self._all(
                "SELECT phase, queue, COUNT(*) FROM jobs GROUP BY phase, queue"
            )
        ]

    def restarts(self) -> list[tuple[str, str, int]]:
        """(action, trigger event, count) of every restart decided."""
        marks = ", ".join("?" for _ in RESTART_ACTIONS)
        return [
            (action, trigger, count)
            for action, trigger, count in self._all(
                f"SELECT action, trigger, COUNT(*) FROM actions WHERE action IN ({marks})"
                " GROUP BY action, trigger",
                sorted(RESTART_ACTIONS),
            )
        ]

    def histogram(self, column: str, bounds: Sequence[float], *, finished: bool) -> Histogram:
        """Counts of `queue_wait` or `run_time` per bucket, over finished jobs if asked."""
        if column not in ("queue_wait", "run_time"):
            raise ValueError(f"no histogram of {column!r}")
        sums = ", ".join(f"SUM(CASE WHEN {column} <= ? THEN 1 ELSE 0 END)" for _ in bounds)
        where = f" WHERE {column} IS NOT NULL" + (" AND finished IS NOT NULL" if finished else "")
        row = self._all(f"SELECT {sums}, COUNT({column}), SUM({column}) FROM jobs{where}", bounds)[
            0
        ]
        return Histogram(
            buckets=tuple((bound, row[i] or 0) for i, bound in enumerate(bounds)),
            count=row[-2] or 0,
            total=row[-1] or 0.0,
        )


def _summary(row: Sequence[Any]) -> JobSummary:
    return JobSummary(**dict(zip(JobSummary.__struct_fields__, row, strict=False)))


def not_found(key: str, incarnation: int | None, incarnations: int) -> str:
    """Why there is no timeline of `key` (its `incarnation`-th, if asked for one)."""
    if incarnation is None or not incarnations:
        return f"no job {key}"
    have = "1" if incarnations == 1 else f"1 to {incarnations}"
    return f"no incarnation {incarnation} of {key}: it has {have}"
