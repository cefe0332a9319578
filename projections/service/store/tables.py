"""The store's writes in SQL: one connection and the statements the store runs, no folding.

`Store` runs them on a connection of its own process. A bulk load runs them in a child
process (`TablesProcess`) so that the database has the second core while the store
decodes and folds in this one. A thread would not do: the sqlite3 module takes the GIL
back after every row it steps, so a writer thread and a decoding thread queue behind
each other and take longer together than one after the other (docs/benchmarks.md).
The statements are shared by SQLite and PostgreSQL (`database`).
"""

from __future__ import annotations

import contextlib
import fcntl
import gc
import os
import signal
import struct
import subprocess
import sys
from collections import deque
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any, NamedTuple, get_args

import msgspec

from lavalog.events.observations import AnyObservation
from lavalog.projections.service.store import schema
from lavalog.projections.service.store.database import EventRow, Inserted, Location, NotLeader
from lavalog.projections.service.store.locations import location_from_spec

#: the `jobs` columns from `uid` to `history`, with the key once more (for `incarnation`)
JobRow = tuple[Any, ...]
#: (source, partition, next_offset)
PositionRow = tuple[str, int, int]


class Writes(NamedTuple):
    """What a transaction writes besides its events: index rows (duplicates ignored), job
    rows (inserted or updated) and the sources' next offsets."""

    actions: Sequence[Sequence[Any]] = ()
    failures: Sequence[Sequence[Any]] = ()
    jobs: Sequence[JobRow] = ()
    positions: Sequence[PositionRow] = ()


_UPSERT_JOB = """
INSERT INTO jobs (uid, key, namespace, name, incarnation, queue, phase, reason, submitted,
    updated, finished, deleted, ended, retry_count, version, queue_wait, run_time,
    running_since, pods, restarts, history)
VALUES (?, ?, ?, ?,
    (SELECT COALESCE(MAX(incarnation), 0) + 1 FROM jobs WHERE key = ?),
    ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (uid) DO UPDATE SET queue = excluded.queue, phase = excluded.phase,
    reason = excluded.reason, submitted = excluded.submitted, updated = excluded.updated,
    finished = excluded.finished, deleted = excluded.deleted, ended = excluded.ended,
    retry_count = excluded.retry_count, version = excluded.version,
    queue_wait = excluded.queue_wait, run_time = excluded.run_time,
    running_since = excluded.running_since, pods = excluded.pods,
    restarts = excluded.restarts, history = excluded.history
"""

_PRUNED_TABLES = (
    ("events", "job_uid"),
    ("actions", "job_uid"),
    ("pod_failures", "job_uid"),
    ("jobs", "uid"),
)


class _Columns(msgspec.Struct):
    """What the `events` table has columns for, read from an event's JSON."""

    type: str
    id: str
    key: str
    job_uid: str
    time: float


_columns = msgspec.json.Decoder(_Columns)
_OBSERVATIONS = frozenset(kind.__struct_config__.tag for kind in get_args(AnyObservation))


def _event_row(event: bytes | bytearray) -> EventRow:
    """(id, kind, type, key, job_uid, time, body) of an event's JSON."""
    columns = _columns.decode(event)
    kind = "observation" if columns.type in _OBSERVATIONS else "decision"
    return (columns.id, kind, columns.type, columns.key, columns.job_uid, columns.time, event)


class Tables:
    """The store's statements, on a connection of this process."""

    def __init__(self, location: Location, *, durable: bool, read_indexes: bool) -> None:
        """Raises `NotLeader` if another process writes the store."""
        self._db = location.connect(durable=durable)
        try:  # the writer creates the tables: a replica that follows only tries to lead
            if not self._db.try_lead():
                raise NotLeader(f"another lavalog process writes the projections store {location}")
            schema.create(self._db, read_indexes=read_indexes)
        except BaseException:
            self._db.close()
            raise
        self._inserted: deque[Inserted] = deque()

    def begin(self) -> None:
        self._db.begin()

    def commit(self) -> None:
        self._db.commit()

    def rollback(self) -> None:
        self._db.rollback()

    def positions(self, source: str) -> list[tuple[int, int]]:
        """(partition, next offset) of each partition of one source."""
        return [
            (partition, offset)
            for partition, offset in self._db.rows(
                "SELECT partition, next_offset FROM positions WHERE source = ?", (source,)
            )
        ]

    def pruned(self) -> list[str]:
        return [row[0] for row in self._db.rows("SELECT uid FROM pruned")]

    def job_uids(self) -> list[str]:
        return [row[0] for row in self._db.rows("SELECT uid FROM jobs")]

    def log_time(self) -> float:
        """The latest event time of the stored jobs (0 when there are none)."""
        return float(self._db.rows("SELECT MAX(updated) FROM jobs")[0][0] or 0.0)

    def insert_events(self, events: Sequence[bytes | bytearray]) -> Inserted:
        """Store events (each its JSON); duplicates (an id stored already) are left out.

        The columns are read from the JSON here rather than sent along: in a writer
        process, that costs less than shipping them. The answer is the largest seq stored
        before (the new rows get the following ones, in their order) and the duplicates'
        places."""
        if not events:
            return 0, []
        return self._db.insert_events([_event_row(event) for event in events])

    def send_events(self, events: Sequence[bytes]) -> None:
        """`insert_events`, its answer taken later with `inserted` (see TablesProcess)."""
        self._inserted.append(self.insert_events(events))

    def inserted(self) -> Inserted:
        """The answer to the oldest `send_events` not yet taken."""
        return self._inserted.popleft()

    def stored_history(self, uid: str) -> bytes | None:
        """The folded history (msgpack) of a job, if it has a row."""
        rows = self._db.rows("SELECT history FROM jobs WHERE uid = ?", (uid,))
        return bytes(rows[0][0]) if rows else None

    def write(self, writes: Writes) -> None:
        db = self._db
        db.many(f"INSERT INTO actions VALUES ({_marks(8)}) ON CONFLICT DO NOTHING", writes.actions)
        db.many(
            f"INSERT INTO pod_failures VALUES ({_marks(6)}) ON CONFLICT DO NOTHING",
            writes.failures,
        )
        db.many(_UPSERT_JOB, writes.jobs)
        db.many(
            "INSERT INTO positions (source, partition, next_offset) VALUES (?, ?, ?)"
            " ON CONFLICT (source, partition) DO UPDATE SET next_offset = excluded.next_offset",
            writes.positions,
        )

    def prune(self, before: float) -> list[str]:
        """Remove the jobs that ended before `before` (log time); returns their uids."""
        db = self._db
        uids = [row[0] for row in db.rows("SELECT uid FROM jobs WHERE ended < ?", (before,))]
        if uids:
            for table, column in _PRUNED_TABLES:
                db.many(f"DELETE FROM {table} WHERE {column} = ?", [(u,) for u in uids])
            db.many(
                "INSERT INTO pruned (uid, time) VALUES (?, ?) ON CONFLICT DO NOTHING",
                [(uid, before) for uid in uids],
            )
        return uids

    def create_read_indexes(self) -> None:
        schema.create_read_indexes(self._db)

    def close(self, *, abandon: bool = False) -> None:
        """`abandon`: the caller gives the store up (same here: nothing is pending)."""
        self._db.close()


def _marks(count: int) -> str:
    return ", ".join("?" * count)


class WriterFailed(RuntimeError):
    """The child process writing a bulk load stopped: its error, or that it died."""


#: Calls answered by the child; the others are only sent (their errors come with the
#: next answer).
_ANSWERED = frozenset(
    {
        "insert_events",
        "positions",
        "pruned",
        "job_uids",
        "log_time",
        "stored_history",
        "prune",
        "close",
    }
)
_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder()
_request = msgspec.msgpack.Decoder(tuple[str, msgspec.Raw])
_opening = msgspec.msgpack.Decoder(tuple[list[str], bool, bool])
#: The arguments of the calls that take more than plain values. Events as bytearrays:
#: the sqlite3 module binds those as they are, while bytes first go through its adapter
#: lookup, a tenth of an insert's time.
_ARGUMENTS: dict[str, msgspec.msgpack.Decoder[Any]] = {
    "insert_events": msgspec.msgpack.Decoder(tuple[list[bytearray]]),
    "write": msgspec.msgpack.Decoder(tuple[Writes]),
}
_LENGTH = struct.Struct("<I")
#: What a request pipe holds, where the system allows it (Linux' default maximum).
PIPE_BYTES = 1 << 20
#: Inserts sent ahead of their answers at most: an answer (a few KiB at most) that the
#: parent does not read fills the pipe (64 KiB) and stops the child.
_AHEAD = 8
#: where this copy of lavalog is imported from, for the child to import the same
_ROOT = str(Path(__file__).resolve().parents[3])


class TablesProcess:
    """`Tables` in a child process: each call is a message, the child answers in order.

    `send_events` does not wait for its answer, so the caller can send the next rows and
    fold the ones already answered while the child inserts."""

    def __init__(self, location: Location, *, durable: bool, read_indexes: bool) -> None:
        environment = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(filter(None, [_ROOT, os.environ.get("PYTHONPATH")])),
        }
        self._process = subprocess.Popen(
            [sys.executable, "-m", "lavalog.projections.service.store.tables"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=environment,
        )
        assert self._process.stdin is not None and self._process.stdout is not None
        _widen(self._process.stdin)
        self._requests: IO[bytes] = self._process.stdin
        self._answers_in: IO[bytes] = self._process.stdout
        #: answers to `send_events` the child has yet to give, and those already read
        self._unread = 0
        self._answers: deque[Inserted] = deque()
        self._failure: WriterFailed | None = None
        # where to write goes through the pipe, not the command line: a URL may hold a password
        _write_frame(self._requests, _encoder.encode((location.spec(), durable, read_indexes)))
        self._receive()  # the store is open (or the error that it is not)

    def _send(self, method: str, *args: Any) -> None:
        if self._failure is not None:
            raise self._failure
        try:
            _write_frame(self._requests, _encoder.encode((method, args)))
        except OSError:
            self._receive()  # the child stopped: its error is waiting, else it died
            raise

    def _receive(self) -> Any:
        if self._failure is not None:
            raise self._failure
        frame = _read_frame(self._answers_in)
        if frame is None:
            ok, value = False, f"it exited (code {self._process.wait()})"
        else:
            ok, value = _decoder.decode(frame)
        if not ok:
            self._failure = WriterFailed(f"the store writer process failed: {value}")
            raise self._failure
        return value

    def _call(self, method: str, *args: Any) -> Any:
        self._send(method, *args)
        self._read_ahead(0)  # answers sent before this one come first
        return self._receive()

    def _read_ahead(self, keep: int) -> None:
        """Read answers to `send_events` until at most `keep` are unread."""
        while self._unread > keep:
            last, duplicates = self._receive()
            self._answers.append((last, duplicates))
            self._unread -= 1

    def begin(self) -> None:
        self._send("begin")

    def commit(self) -> None:
        self._send("commit")

    def rollback(self) -> None:
        self._send("rollback")

    def positions(self, source: str) -> list[tuple[int, int]]:
        return [(partition, offset) for partition, offset in self._call("positions", source)]

    def pruned(self) -> list[str]:
        return list(self._call("pruned"))

    def job_uids(self) -> list[str]:
        return list(self._call("job_uids"))

    def log_time(self) -> float:
        return float(self._call("log_time"))

    def send_events(self, events: Sequence[bytes]) -> None:
        self._read_ahead(_AHEAD - 1)
        self._send("insert_events", events)
        self._unread += 1

    def inserted(self) -> Inserted:
        if not self._answers:
            self._read_ahead(self._unread - 1)
        return self._answers.popleft()

    def stored_history(self, uid: str) -> bytes | None:
        history: bytes | None = self._call("stored_history", uid)
        return history

    def write(self, writes: Writes) -> None:
        self._send("write", writes)

    def prune(self, before: float) -> list[str]:
        return list(self._call("prune", before))

    def create_read_indexes(self) -> None:
        self._send("create_read_indexes")

    def close(self, *, abandon: bool = False) -> None:
        """Wait for the child to have written everything and closed the file. `abandon`
        (a failed bulk load, maybe interrupted in the middle of a message) or after the
        child failed: only end its requests and wait for it to stop."""
        try:
            if self._failure is None and not abandon:
                self._call("close")
        finally:
            with contextlib.suppress(OSError):  # a dead child: what was left unsent stays so
                self._requests.close()
            try:
                self._process.wait(10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
            self._answers_in.close()


def _widen(pipe: IO[bytes]) -> None:
    """Let a pipe hold a few parts of events (Linux; 64 KiB otherwise): the store sends the
    next part while the child inserts one, rather than waiting for the child to read it."""
    with contextlib.suppress(AttributeError, OSError):
        fcntl.fcntl(pipe.fileno(), fcntl.F_SETPIPE_SZ, PIPE_BYTES)


def _write_frame(out: IO[bytes], data: bytes) -> None:
    out.write(_LENGTH.pack(len(data)))
    out.write(data)
    out.flush()


def _read_frame(source: IO[bytes]) -> bytes | None:
    """The next frame, None at the end of the stream (or in the middle of a frame)."""
    header = source.read(_LENGTH.size)
    if len(header) < _LENGTH.size:
        return None
    (length,) = _LENGTH.unpack(header)
    data = source.read(length)
    return data if len(data) == length else None  # cut short: the sender went away


def _serve(requests: IO[bytes], answers: IO[bytes], tables: Tables) -> None:
    """The child: run each call on `tables` and answer those in `_ANSWERED`, until `close`
    or the first error (which is the answer to the next call)."""
    while (frame := _read_frame(requests)) is not None:
        method, arguments = _request.decode(frame)
        args = _ARGUMENTS.get(method, _decoder).decode(arguments)
        try:
            result = getattr(tables, method)(*args)
        except Exception as exc:
            _write_frame(answers, _encoder.encode((False, f"{type(exc).__name__}: {exc}")))
            break
        if method in _ANSWERED:
            _write_frame(answers, _encoder.encode((True, result)))
        if method == "close":
            return
    tables.close()  # the store went away without closing, or failed: nothing to keep


def main() -> None:
    """`python -m lavalog.projections.service.store.tables`: the child of TablesProcess. Its first
    request says which store to open: (location spec, durable, read_indexes)."""
    gc.disable()  # nothing here makes reference cycles, and the rows are many
    # Ctrl-C in a terminal reaches the whole process group: the parent decides what is
    # kept (it closes or goes away, and then the requests end)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    answers = sys.stdout.buffer
    try:
        opening = _read_frame(sys.stdin.buffer)
        if opening is None:
            raise SystemExit(0)  # the parent went away before saying what to open
        spec, durable, read_indexes = _opening.decode(opening)
        tables = Tables(location_from_spec(spec), durable=durable, read_indexes=read_indexes)
    except Exception as exc:
        _write_frame(answers, _encoder.encode((False, f"{type(exc).__name__}: {exc}")))
        raise SystemExit(1) from exc
    _write_frame(answers, _encoder.encode((True, None)))
    _serve(sys.stdin.buffer, answers, tables)


if __name__ == "__main__":
    main()
