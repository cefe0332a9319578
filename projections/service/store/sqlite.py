"""The projections store in a SQLite file: the default, one process feeds it and serves it."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from lavalog.projections.service.store.database import Connection, EventRow, Inserted, Location

#: Page size of a new SQLite file (an existing one keeps its own): with SQLite's default
#: 4 KiB, a page holds a handful of events and the event id index splits pages all the time.
PAGE_SIZE = 16 * 1024
#: SQLite's page cache per connection: the indexes of a million events stay in memory.
CACHE_KIB = 64 * 1024
#: The SQLite file inside the state directory.
FILE_NAME = "projections.sqlite"


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
