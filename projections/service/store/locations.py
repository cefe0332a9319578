"""Which store a user means: a SQLite file, or a PostgreSQL URL (`--store postgresql://...`).

Above both backends: PostgreSQL is imported only for a PostgreSQL store, so that psycopg
(the `postgres` extra) stays optional.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from lavalog.projections.service.store.database import Location
from lavalog.projections.service.store.sqlite import FILE_NAME, SqliteLocation


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
