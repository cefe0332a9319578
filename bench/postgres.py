"""A throwaway PostgreSQL server for the tests and benchmarks of the PostgreSQL store.

The server is the system's own (`initdb`, `pg_ctl` and `postgres` of Debian's
`postgresql` package), installed with apt-get when missing, started in a temporary
directory with trust authentication, and stopped (its directory removed) on exit. It
listens on a Unix socket in that directory only, not on a TCP port: a port found free
and then handed to the server can be taken meanwhile by any other process (two test
suites at once, each with its brokers and clients), and the server then fails to start.
`fsync` is off: the data is thrown away anyway, and the transactions, locks and
visibility that the store relies on are unchanged.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from types import TracebackType
from urllib.parse import quote

import psycopg

#: where Debian puts the server programs (only psql and friends are on PATH)
_DEBIAN_BIN = "/usr/lib/postgresql/*/bin"
_USER = "lavalog"


class PostgresUnavailable(RuntimeError):
    """No PostgreSQL server here, and the system's package manager cannot install one."""


def server_bin() -> Path:
    """The directory of `initdb` and `pg_ctl`, installing Debian's package if needed."""
    found = _find_bin()
    if found is not None:
        return found
    if shutil.which("apt-get") is None:
        raise PostgresUnavailable("initdb is missing and there is no apt-get to install it")
    if os.geteuid() != 0:
        raise PostgresUnavailable("initdb is missing and apt-get needs root to install it")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for command in (["apt-get", "update"], ["apt-get", "install", "-y", "postgresql"]):
        result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900)
        if result.returncode != 0:
            raise PostgresUnavailable(f"{' '.join(command)} failed: {result.stderr[-500:]}")
    found = _find_bin()
    if found is None:
        raise PostgresUnavailable("apt-get installed postgresql, but initdb is still missing")
    return found


def _find_bin() -> Path | None:
    on_path = shutil.which("initdb")
    if on_path is not None and shutil.which("pg_ctl") is not None:
        return Path(on_path).resolve().parent
    versions = sorted(glob.glob(_DEBIAN_BIN), key=lambda p: int(Path(p).parent.name))
    return Path(versions[-1]) if versions else None


class TemporaryPostgres:
    """`with TemporaryPostgres() as server:` a running server; `server.new_database()`."""

    def __init__(self) -> None:
        self._bin = server_bin()
        self._scratch = Path(tempfile.mkdtemp(prefix="lavalog-postgres-"))
        if os.geteuid() == 0:
            shutil.chown(self._scratch, user="nobody")
        self._data = self._scratch / "data"
        self._databases = 0

    def url(self, database: str = "postgres") -> str:
        """A libpq URL over the server's Unix socket (`host` names its directory)."""
        return f"postgresql://{_USER}@/{database}?host={quote(str(self._scratch), safe='/')}"

    def __enter__(self) -> TemporaryPostgres:
        try:
            self._run(
                "initdb", "-D", str(self._data), "-U", _USER, "-A", "trust", "--no-sync",
                "-E", "UTF8", "--locale", "C",
            )  # fmt: skip
            options = (
                f"-c listen_addresses='' -c unix_socket_directories={self._scratch}"
                " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
            )
            self._run(
                "pg_ctl", "-D", str(self._data), "-o", options, "-l",
                str(self._scratch / "server.log"), "-w", "-t", "60", "start",
            )  # fmt: skip
        except BaseException:
            shutil.rmtree(self._scratch, ignore_errors=True)
            raise
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        try:
            self._run("pg_ctl", "-D", str(self._data), "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(self._scratch, ignore_errors=True)

    def restart(self) -> None:
        """Stop the server (its sessions ended, what they committed kept) and start it again:
        every client connection is lost."""
        self._run(
            "pg_ctl", "-D", str(self._data), "-l", str(self._scratch / "server.log"),
            "-m", "fast", "-w", "-t", "60", "restart",
        )  # fmt: skip

    def new_database(self, prefix: str = "store") -> str:
        """The URL of a new, empty database."""
        self._databases += 1
        name = f"{re.sub(r'[^a-z0-9_]', '_', prefix.lower())}_{self._databases}"
        with psycopg.connect(self.url(), autocommit=True) as admin:
            admin.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def _run(self, program: str, *args: str) -> None:
        command = [str(self._bin / program), *args]
        if os.geteuid() == 0:  # initdb and postgres refuse root: they run as nobody
            command = ["setpriv", "--reuid", "nobody", "--regid", "nogroup", "--clear-groups"]
            command += [str(self._bin / program), *args]
        result = subprocess.run(command, capture_output=True, text=True, timeout=120)
        if result.returncode != 0:
            log = self._scratch / "server.log"
            tail = log.read_text()[-1000:] if log.exists() else ""
            raise RuntimeError(f"{program} failed: {result.stderr or result.stdout}{tail}")
