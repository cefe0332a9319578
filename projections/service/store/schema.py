"""The schema of the projections store: one place, documented in docs/projections.md.

Written in SQLite's types; `postgres` (beside this module) translates them for PostgreSQL.
"""

from __future__ import annotations

from lavalog.projections.service.store.database import Connection

#: Bumped when a table or the folded history (`jobs.history`) changes meaning; an older
#: file is rebuilt from the topics, not migrated. 2: attempt times on the log's clock.
SCHEMA_VERSION = 2

_TABLES = """
CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
-- next offset to consume per source partition, written in the transaction of the batch
CREATE TABLE IF NOT EXISTS positions (
    source      TEXT NOT NULL,
    partition   INTEGER NOT NULL,
    next_offset INTEGER NOT NULL,
    PRIMARY KEY (source, partition)
);
-- every event applied, as received, in log order (seq); the id makes a duplicate a no-op
CREATE TABLE IF NOT EXISTS events (
    seq     INTEGER PRIMARY KEY,
    id      TEXT NOT NULL UNIQUE,
    kind    TEXT NOT NULL,          -- 'observation' or 'decision'
    type    TEXT NOT NULL,
    key     TEXT NOT NULL,
    job_uid TEXT NOT NULL,
    time    REAL NOT NULL,
    body    BLOB NOT NULL           -- the event's JSON, byte for byte
);
-- one row per job incarnation: the list columns and the folded history (msgpack)
CREATE TABLE IF NOT EXISTS jobs (
    uid           TEXT PRIMARY KEY,
    key           TEXT NOT NULL,
    namespace     TEXT NOT NULL,
    name          TEXT NOT NULL,
    incarnation   INTEGER NOT NULL,
    queue         TEXT NOT NULL,
    phase         TEXT NOT NULL,
    reason        TEXT NOT NULL,
    submitted     REAL,
    updated       REAL NOT NULL,
    finished      REAL,
    deleted       REAL,
    ended         REAL,             -- finished, else deleted: what retention looks at
    retry_count   INTEGER NOT NULL,
    version       INTEGER NOT NULL,
    queue_wait    REAL,
    run_time      REAL NOT NULL,
    running_since REAL,
    pods          INTEGER NOT NULL,
    restarts      INTEGER NOT NULL,
    history       BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS jobs_by_key ON jobs (key, incarnation);
CREATE INDEX IF NOT EXISTS jobs_by_ended ON jobs (ended);
-- every action decided (restarts, aborts...), for /metrics and aggregates
CREATE TABLE IF NOT EXISTS actions (
    id        TEXT PRIMARY KEY,
    job_uid   TEXT NOT NULL,
    namespace TEXT NOT NULL,
    time      REAL NOT NULL,
    action    TEXT NOT NULL,
    trigger   TEXT NOT NULL,
    exit_code INTEGER,
    policy    TEXT NOT NULL
);
-- the first failure (or eviction) observed of each pod, for the top failure reasons
CREATE TABLE IF NOT EXISTS pod_failures (
    pod_uid   TEXT PRIMARY KEY,
    job_uid   TEXT NOT NULL,
    namespace TEXT NOT NULL,
    time      REAL NOT NULL,
    reason    TEXT NOT NULL,
    exit_code INTEGER
);
-- jobs removed by retention: their late events are ignored
CREATE TABLE IF NOT EXISTS pruned (
    uid  TEXT PRIMARY KEY,
    time REAL NOT NULL
);
"""


#: Indexes only reads and retention need: a bulk load builds them once, at its end,
#: which is faster than maintaining them row by row.
_READ_INDEXES = """
CREATE INDEX IF NOT EXISTS events_by_job ON events (job_uid, seq);
CREATE INDEX IF NOT EXISTS actions_by_job ON actions (job_uid);
CREATE INDEX IF NOT EXISTS pod_failures_by_job ON pod_failures (job_uid);
CREATE INDEX IF NOT EXISTS pod_failures_by_reason ON pod_failures (reason);
-- what the web UI asks on every page, read from narrow indexes rather than a scan of
-- every job's row (each holds its folded history): the log's "now" (MAX(updated)) from
-- the index's end; the list's counts by phase, queue and namespace (its total, its
-- filters' counts) and the failed jobs' reasons from covering indexes; the list's page,
-- newest first, walking the index of its order (`queries._SORT`) rather than sorting
-- every job, its filters (`queries.JobFilter`) checked on the index's entries before a
-- row is read; a namespace's jobs (its pods' failure reasons) without reading their rows
CREATE INDEX IF NOT EXISTS jobs_by_updated ON jobs (updated);
CREATE INDEX IF NOT EXISTS jobs_by_phase_reason ON jobs (phase, queue, namespace, reason);
CREATE INDEX IF NOT EXISTS jobs_list ON jobs
    ((COALESCE(submitted, updated)), uid, phase, namespace, queue, key, ended);
CREATE INDEX IF NOT EXISTS jobs_by_namespace ON jobs (namespace, uid);
"""


#: Indexes earlier versions created that nothing reads any more (dropped on open).
_RETIRED_INDEXES = """
DROP INDEX IF EXISTS jobs_by_submitted;
DROP INDEX IF EXISTS jobs_by_sort;
DROP INDEX IF EXISTS jobs_by_phase;
"""


class SchemaMismatch(RuntimeError):
    """The store file was written by another schema version: rebuild it from the topics."""


def create(db: Connection, *, read_indexes: bool = True) -> None:
    """Create the tables (idempotent) and check the store's schema version."""
    with db.schema_lock():
        db.script(_TABLES)
        db.script(_RETIRED_INDEXES)
        if read_indexes:
            create_read_indexes(db)
        rows = db.rows("SELECT value FROM meta WHERE key = 'schema_version'")
        if not rows:
            db.rows(
                "INSERT INTO meta (key, value) VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),)
            )
    if rows and int(rows[0][0]) != SCHEMA_VERSION:
        raise SchemaMismatch(
            f"store schema version {rows[0][0]}, this lavalog writes {SCHEMA_VERSION}: "
            "run `lavalog projections rebuild`"
        )


def create_read_indexes(db: Connection) -> None:
    db.script(_READ_INDEXES)


def refresh_statistics(db: Connection) -> None:
    """Measure the jobs table for the query planner (how many jobs per phase...). SQLite
    has no statistics until asked: without them it reads every job of a common phase to
    sort it (150 ms at 10,000 jobs) rather than walking the list's index (2 ms).
    PostgreSQL's autovacuum measures on its own; asking it too is harmless."""
    db.script("ANALYZE jobs")
