"""The projections store in PostgreSQL (`--store postgresql://...`), through psycopg 3.

The tables are the SQLite store's (`projections.service.store.schema`, its types translated) in the
schema `lavalog` of the database the URL names, so that a rebuild can build the schema
`lavalog_rebuild` beside it and swap the two in one transaction. Several API replicas
share the database: each reads, and the one holding a session advisory lock on the
writing connection writes (`try_lead`). A replica whose connection drops loses the lock
with the connection, so no two replicas ever write at once.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import re
from collections.abc import Callable, Iterator, Sequence
from typing import Any, ParamSpec, TypeVar
from urllib.parse import urlsplit, urlunsplit

import psycopg

from lavalog.projections.service.store.database import (
    Connection,
    EventRow,
    Inserted,
    Location,
    NotLeader,
    StoreUnreachable,
)

#: the schema holding the store's tables
SCHEMA = "lavalog"
_NAME = re.compile(r"[a-z_][a-z0-9_]*")
#: SQLite's column types, in PostgreSQL (REAL is 4 bytes there; row ids are 64 bits)
_TYPES = {"INTEGER": "BIGINT", "REAL": "DOUBLE PRECISION", "BLOB": "BYTEA"}
_TYPE = re.compile(r"\b(" + "|".join(_TYPES) + r")\b")
_COPY_EVENTS = (
    "COPY events (seq, id, kind, type, key, job_uid, time, body) FROM STDIN (FORMAT BINARY)"
)
_EVENT_TYPES = ["int8", "text", "text", "text", "text", "text", "float8", "bytea"]
#: seconds to wait for the server when the URL does not say (libpq waits for TCP's own)
CONNECT_TIMEOUT = 10


def postgres_ddl(ddl: str) -> str:
    """The schema's statements with PostgreSQL's types."""
    return _TYPE.sub(lambda match: _TYPES[match.group(1)], ddl)


@functools.lru_cache(maxsize=256)
def postgres_sql(sql: str) -> str:
    """A statement with psycopg's placeholders (the store's SQL has no `?` or `%` else)."""
    return sql.replace("?", "%s")


def _lock_key(schema: str, purpose: str) -> int:
    """An advisory lock's number, per schema and purpose (the writer, schema changes)."""
    digest = hashlib.blake2b(f"lavalog:{schema}:{purpose}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def new_places(rows: Sequence[EventRow], stored: set[str]) -> tuple[list[int], list[int]]:
    """(places of the new rows, places of the duplicates): ids in `stored` or earlier in
    `rows`."""
    seen = set(stored)
    new: list[int] = []
    duplicates: list[int] = []
    for place, row in enumerate(rows):
        if row[0] in seen:
            duplicates.append(place)
        else:
            seen.add(row[0])
            new.append(place)
    return new, duplicates


def _reason(error: psycopg.OperationalError) -> str:
    """libpq's first line, which says what failed (the next ones guess why)."""
    return str(error).strip().split("\n")[0] or type(error).__name__


class PostgresLocation:
    """A store in a PostgreSQL database, given by a libpq URL."""

    def __init__(self, url: str, *, schema: str = SCHEMA) -> None:
        if not _NAME.fullmatch(schema):
            raise ValueError(f"schema {schema!r}: lower-case letters, digits and _ only")
        self.url = url
        self.schema = schema

    def __str__(self) -> str:
        """The URL without its password (it goes into messages and logs)."""
        parts = urlsplit(self.url)
        host = parts.netloc.rpartition("@")
        if ":" in host[0]:
            user = host[0].partition(":")[0]
            parts = parts._replace(netloc=f"{user}:***@{host[2]}")
        shown = urlunsplit(parts)
        return shown if self.schema == SCHEMA else f"{shown} (schema {self.schema})"

    def connect(self, *, durable: bool = True) -> Connection:
        return PostgresConnection(self, durable=durable)

    def open(self) -> psycopg.Connection[tuple[Any, ...]]:
        """A connection in autocommit mode, or `StoreUnreachable` saying why not."""
        try:
            timeout = {} if "connect_timeout" in self.url else {"connect_timeout": CONNECT_TIMEOUT}
            return psycopg.connect(self.url, autocommit=True, **timeout)  # type: ignore[arg-type]
        except psycopg.OperationalError as exc:
            raise StoreUnreachable(
                f"cannot reach the projections store at {self}: {_reason(exc)}"
            ) from None

    def exists(self) -> bool:
        with self.open() as db:
            row = db.execute("SELECT to_regclass(%s)", [f"{self.schema}.meta"]).fetchone()
        return row is not None and row[0] is not None

    def staging(self) -> PostgresLocation:
        """Refused (`NotLeader`) while a `serve` replica writes this store: it would go on
        from its own memory of the replaced tables."""
        partial = PostgresLocation(self.url, schema=f"{self.schema}_rebuild")
        with self.open() as db, db.transaction():
            self._unwritten(db)
            db.execute(f"DROP SCHEMA IF EXISTS {partial.schema} CASCADE")
        return partial

    def replace(self, staging: Location) -> None:
        """One transaction: readers see the old tables until the commit, the new ones after
        (a query running meanwhile delays the swap, which waits for its locks)."""
        assert isinstance(staging, PostgresLocation) and staging.url == self.url
        with self.open() as db, db.transaction():
            self._unwritten(db)
            db.execute(f"DROP SCHEMA IF EXISTS {self.schema} CASCADE")
            db.execute(f"ALTER SCHEMA {staging.schema} RENAME TO {self.schema}")

    def spec(self) -> list[str]:
        return ["postgres", self.url, self.schema]

    def _unwritten(self, db: psycopg.Connection[tuple[Any, ...]]) -> None:
        """Take the writer lock until the end of `db`'s transaction, or raise `NotLeader`."""
        row = db.execute(
            "SELECT pg_try_advisory_xact_lock(%s)", [_lock_key(self.schema, "writer")]
        ).fetchone()
        if row is None or not row[0]:
            raise NotLeader(f"a `lavalog projections serve` writes {self}: stop it first")


P = ParamSpec("P")
R = TypeVar("R")


def _reaching(method: Callable[P, R]) -> Callable[P, R]:
    """A lost connection (the server restarted or went away) as `StoreUnreachable`: one
    line for the command, and the batch in flight rolled back with the connection."""

    @functools.wraps(method)
    def reaching(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return method(*args, **kwargs)
        except psycopg.OperationalError as exc:
            connection = args[0]
            assert isinstance(connection, PostgresConnection)
            raise StoreUnreachable(
                f"lost the projections store at {connection.location}: {_reason(exc)}"
            ) from None

    return reaching


class PostgresConnection:
    """A connection whose statements run one by one (autocommit) unless `begin` was called.

    Not `durable`: commits do not wait for the WAL to be flushed (a rebuild's)."""

    def __init__(self, location: PostgresLocation, *, durable: bool) -> None:
        self.location = location
        self._db = location.open()
        self._schema = location.schema
        self._db.execute(f"SET search_path TO {self._schema}")
        if not durable:
            self._db.execute("SET synchronous_commit TO off")

    @_reaching
    def rows(self, sql: str, values: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        cursor = self._db.execute(postgres_sql(sql), values)
        return cursor.fetchall() if cursor.description is not None else []

    @_reaching
    def many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        if rows:
            with self._db.cursor() as cursor:
                cursor.executemany(postgres_sql(sql), rows)

    def script(self, ddl: str) -> None:
        self._db.execute(postgres_ddl(ddl).encode())

    @contextlib.contextmanager
    def schema_lock(self) -> Iterator[None]:
        """A transaction holding the schema's lock: replicas starting together create
        the tables once, and the second one sees them."""
        with self._db.transaction():
            self._db.execute("SELECT pg_advisory_xact_lock(%s)", [_lock_key(self._schema, "ddl")])
            self._db.execute(f"CREATE SCHEMA IF NOT EXISTS {self._schema}")
            yield

    @_reaching
    def begin(self) -> None:
        self._db.execute("BEGIN")

    @_reaching
    def commit(self) -> None:
        self._db.execute("COMMIT")

    @_reaching
    def rollback(self) -> None:
        self._db.execute("ROLLBACK")

    @_reaching
    def insert_events(self, rows: Sequence[EventRow]) -> Inserted:
        """The stored ids among these, then the new rows numbered and copied in (COPY,
        binary: the fastest way in). The writer lock keeps the numbers to this process."""
        if not rows:
            return 0, []
        stored = self._db.execute(
            "SELECT id FROM events WHERE id = ANY(%s)", [[row[0] for row in rows]]
        ).fetchall()
        last_row = self._db.execute("SELECT COALESCE(MAX(seq), 0) FROM events").fetchone()
        last: int = last_row[0] if last_row is not None else 0
        new, duplicates = new_places(rows, {row[0] for row in stored})
        with self._db.cursor() as cursor, cursor.copy(_COPY_EVENTS) as copy:
            copy.set_types(_EVENT_TYPES)
            for seq, place in enumerate(new, start=last + 1):
                copy.write_row((seq, *rows[place]))
        return last, duplicates

    @_reaching
    def try_lead(self) -> bool:
        row = self._db.execute(
            "SELECT pg_try_advisory_lock(%s)", [_lock_key(self._schema, "writer")]
        ).fetchone()
        return row is not None and bool(row[0])

    def broken(self) -> bool:
        return self._db.broken or self._db.closed

    def close(self) -> None:
        """Release the writer lock first: the server releases it only once it has seen
        the connection end, which may come after the next writer's attempt."""
        if not self.broken():
            with contextlib.suppress(psycopg.Error):
                self._db.execute("SELECT pg_advisory_unlock_all()")
        self._db.close()
