"""What a projections store's database is: one connection API over SQLite and PostgreSQL.

The store's SQL is written once, with `?` placeholders, in what both dialects accept
(`INSERT ... ON CONFLICT`, row values, `CASE`); the schema is written once in SQLite's
types and translated for PostgreSQL. What differs is behind these two interfaces,
implemented by `sqlite` and `postgres` (beside this module), which depend on it and never
the reverse: how a connection is opened and tuned, how a write transaction begins, how
events get their sequence numbers, and who may write. `locations` opens either from what
a user gives.

A store has one writer at a time (`try_lead`): it folds job histories in memory, so two
writers would each fold from a stale copy. A SQLite file has one process by
construction; a PostgreSQL store is shared by API replicas, of which the one holding an
advisory lock writes and the others read.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any, Protocol

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
        """What `locations.location_from_spec` opens again (in a writer process)."""
        ...
