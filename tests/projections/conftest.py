"""Fixtures of the projections tests: logging, and the store's two databases.

`new_store` makes empty stores of the test's database: a test that asks for it runs
twice, on SQLite and on PostgreSQL. The PostgreSQL server is a real one, the system's
(installed with apt-get when missing, `bench/postgres.py`), started once per session in
a temporary directory; where it cannot be installed the PostgreSQL runs are skipped,
saying why.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator

import pytest

from bench.postgres import PostgresUnavailable, TemporaryPostgres
from lavalog.projections.service.store.database import Location
from lavalog.projections.service.store.postgres import PostgresLocation
from lavalog.projections.service.store.sqlite import SqliteLocation
from tests.json_logs import restored_logging

LAVALOG = [sys.executable, "-m", "lavalog.cli.main"]
#: A factory of empty stores, each named for the test's reading.
NewStore = Callable[[str], Location]


@pytest.fixture(autouse=True)
def _restored_logging() -> Iterator[None]:
    """`lavalog run` and the projections commands configure the process's logging."""
    with restored_logging():
        yield


@pytest.fixture
def spawn() -> Iterator[Callable[..., subprocess.Popen[str]]]:
    """Start `lavalog ARGS...` (text pipes; `env=` its environment); killed at the end."""
    processes: list[subprocess.Popen[str]] = []

    def start(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
        process = subprocess.Popen(
            [*LAVALOG, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
        )
        processes.append(process)
        return process

    yield start
    for process in processes:
        if process.poll() is None:
            process.kill()
            process.wait()


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
