"""Where the projections store lives, and one connection API over SQLite and PostgreSQL.

The store's SQL is written once, with `?` placeholders, in what both dialects accept
(`INSERT ... ON CONFLICT`, row values, `CASE`); the schema is written once in SQLite's
types and translated for PostgreSQL (`projections.service.store.postgres`). What differs is here, in
the two connection classes: how a connection is opened and tuned, how a write
transaction begins, how events get their sequence numbers, and who may write.

A store has one writer at a time (`try_lead`): it folds job histories in memory, so two
writers would each fold from a stale copy. A SQLite file has one process by
construction; a PostgreSQL store is shared by API replicas, of which the one holding an
advisory lock writes and the others read.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol

#: Page size of a new SQLite file (an existing one keeps its own): with SQLite's default
#: 4 KiB, a page holds a handful of events and the event id index splits pages all the time.
PAGE_SIZE = 16 * 1024
#: SQLite's page cache per connection: the indexes of a million events stay in memory.
CACHE_KIB = 64 * 1024
#: The SQLite file inside the state directory.
FILE_NAME = "projections.sqlite"

#: (id, kind, type, key, job_uid, time, body) of an event
EventRow = tuple[str, str, str, str, str, float, bytes | bytearray]
#: inserting events: the largest seq stored before, the places of the duplicates
Inserted = tuple[int, list[int]]


class NotLeader(RuntimeError):
    """Another process writes this store (a PostgreSQL store's other replica)."""


class StoreUnreachable(RuntimeError):
    """The store's database did not answer or refused the connection (one line why)."""


class Connection(Protocol):
    """One connection to a store, SQLite or PostgreSQL; `?` placeholders in both."""

    def rows(self, sql: str, values: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Run one statement; its rows (none for a write)."""
        ...

    def many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        """Run one statement once per row."""
        ...

    def script(self, ddl: str) -> None:
        """Run statements without parameters (the schema, in SQLite's types)."""
        ...

    def schema_lock(self) -> contextlib.AbstractContextManager[None]:
        """Create or check the schema without racing another process doing the same."""
        ...

    def begin(self) -> None:
        """Begin a write transaction."""
        ...

    def commit(self) -> None: ...

    def rollback(self) -> None: ...

    def insert_events(self, rows: Sequence[EventRow]) -> Inserted:
        """Store events, leaving out those whose id is stored (or comes earlier in `rows`);
        the new ones get the seq numbers after the largest one stored, in their order."""
        ...

    def try_lead(self) -> bool:
        """Become this store's writer unless another connection is; kept until closed."""
        ...

    def broken(self) -> bool:
        """The connection is lost (a database server restarted): only a new one works."""
        ...

    def close(self) -> None: ...


class Location(Protocol):
    """A store's database: a SQLite file or a schema of a PostgreSQL database."""

    def connect(self, *, durable: bool = True) -> Connection:
        """`durable`: not for a store thrown away if the process dies (a rebuild's)."""
        ...

    def exists(self) -> bool:
        """Some store was created here."""
        ...

    def staging(self) -> Location:
        """Where a rebuild writes before `replace` swaps it in (emptied now)."""
        ...

    def replace(self, staging: Location) -> None:
        """Put the store built at `staging` in this one's place, at once for readers."""
        ...

    def spec(self) -> list[str]:
        """What `location_from_spec` opens again (in a writer process)."""
        ...


class SqliteLocation:
    """A SQLite file: the default, one process feeds it and serves it."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __str__(self) -> str:
        return str(self.path)

    def connect(self, *, durable: bool = True) -> Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        return SqliteConnection(self.path, durable=durable)

    def exists(self) -> bool:
        return self.path.is_file()

    def staging(self) -> SqliteLocation:
        partial = SqliteLocation(self.path.with_name(self.path.name + ".rebuild"))
        for leftover in (partial.path, *partial._sidecars()):
            leftover.unlink(missing_ok=True)
        return partial

    def replace(self, staging: Location) -> None:
        assert isinstance(staging, SqliteLocation)
        for sidecar in self._sidecars():  # the old file's log must not be applied to the new
            sidecar.unlink(missing_ok=True)
        staging.path.replace(self.path)

    def spec(self) -> list[str]:
        return ["sqlite", str(self.path)]

    def _sidecars(self) -> tuple[Path, Path]:
        return self.path.with_name(self.path.name + "-wal"), self.path.with_name(
            self.path.name + "-shm"
        )


class SqliteConnection:
    """A connection in WAL mode, so that readers never wait for the writer.

    Not `durable`: the rollback journal in memory and no fsync, for a store that is
    thrown away if the process dies (a rebuild, which swaps its file in when complete).
    """

    def __init__(self, path: Path, *, durable: bool) -> None:
        self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self._db.execute(f"PRAGMA page_size = {PAGE_SIZE}")
        self._db.execute(f"PRAGMA cache_size = -{CACHE_KIB}")
        if durable:
            self._db.execute("PRAGMA journal_mode = WAL")
            self._db.execute("PRAGMA synchronous = NORMAL")
        else:
            self._db.execute("PRAGMA journal_mode = MEMORY")
            self._db.execute("PRAGMA synchronous = OFF")
        self._cursor = self._db.cursor()

    def rows(self, sql: str, values: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self._cursor.execute(sql, values).fetchall()

    def many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        self._cursor.executemany(sql, rows)

    def script(self, ddl: str) -> None:
        self._db.executescript(ddl)

    @contextlib.contextmanager
    def schema_lock(self) -> Iterator[None]:
        yield  # one process per file

    def begin(self) -> None:
        self._cursor.execute("BEGIN IMMEDIATE")

    def commit(self) -> None:
        self._cursor.execute("COMMIT")

    def rollback(self) -> None:
        self._cursor.execute("ROLLBACK")

    def insert_events(self, rows: Sequence[EventRow]) -> Inserted:
        """One statement for all: `seq` is the rowid, so the new rows get the numbers after
        the largest one in their order; the duplicates' places are read back only when
        the count says that there were some."""
        cursor = self._cursor
        last: int = cursor.execute("SELECT COALESCE(MAX(seq), 0) FROM events").fetchone()[0]
        cursor.executemany(
            "INSERT OR IGNORE INTO events (id, kind, type, key, job_uid, time, body)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            rows,
        )
        if cursor.rowcount == len(rows):
            return last, []
        new = cursor.execute("SELECT id FROM events WHERE seq > ? ORDER BY seq", (last,))
        duplicates: list[int] = []
        (upcoming,) = next(new, (None,))
        for place, row in enumerate(rows):
            if row[0] == upcoming:
                (upcoming,) = next(new, (None,))
            else:
                duplicates.append(place)
        return last, duplicates

    def try_lead(self) -> bool:
        return True  # one process per file

    def broken(self) -> bool:
        return False  # a file does not go away

    def close(self) -> None:
        self._db.close()


def is_postgres(text: str) -> bool:
    return text.startswith(("postgresql://", "postgres://"))


def location_of(target: Location | Path | str) -> Location:
    """A store from what a user or a caller gives: a location, a file, or a PostgreSQL URL."""
    if isinstance(target, str) and is_postgres(target):
        from lavalog.projections.service.store.postgres import PostgresLocation

        return PostgresLocation(target)
    if isinstance(target, str | Path):
        return SqliteLocation(Path(target))
    return target


def store_location(state_dir: Path, store: str | None) -> Location:
    """`--store URL` if given, else the SQLite file in `--state-dir`."""
    if not store:
        return SqliteLocation(state_dir / FILE_NAME)
    if not is_postgres(store):
        raise ValueError(
            f"{store!r} is not a postgresql:// URL (a SQLite store is the file in --state-dir)"
        )
    return location_of(store)


def location_from_spec(spec: Sequence[str]) -> Location:
    """The location whose `spec()` this is (a writer process opens its parent's store)."""
    if spec[0] == "sqlite":
        return SqliteLocation(Path(spec[1]))
    from lavalog.projections.service.store.postgres import PostgresLocation

    return PostgresLocation(spec[1], schema=spec[2])
