"""Fixtures of the projections tests: logging, and the store's two databases.

`new_store` makes empty stores of the test's database: a test that asks for it runs
twice, on SQLite and on PostgreSQL. The PostgreSQL server is a real one, the system's
(installed with apt-get when missing, `bench/postgres.py`), started once per session in
a temporary directory; where it cannot be installed the PostgreSQL runs are skipped,
saying why.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from bench.postgres import PostgresUnavailable, TemporaryPostgres
from projections.database import Location, SqliteLocation
from projections.postgres import PostgresLocation
from tests.json_logs import restored_logging

#: A factory of empty stores, each named for the test's reading.
NewStore = Callable[[str], Location]


@pytest.fixture(autouse=True)
def _restored_logging() -> Iterator[None]:
    """`lavalog run` and the projections commands configure the process's logging."""
    with restored_logging():
        yield


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[TemporaryPostgres]:
    try:
        server = TemporaryPostgres()
    except PostgresUnavailable as exc:
        pytest.skip(f"no PostgreSQL server for the PostgreSQL store: {exc}")
    with server:
        yield server


@pytest.fixture(params=["sqlite", "postgresql"])
def database(request: pytest.FixtureRequest) -> str:
    """The store's database in this run of the test."""
    name: str = request.param
    return name


@pytest.fixture
def new_store(request: pytest.FixtureRequest, database: str, tmp_path) -> NewStore:
    if database == "sqlite":
        return lambda name: SqliteLocation(tmp_path / f"{name}.sqlite")
    server: TemporaryPostgres = request.getfixturevalue("postgres_server")
    return lambda name: PostgresLocation(server.new_database(name))
