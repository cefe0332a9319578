"""`Tables` in a child process, so that a bulk load's SQL has the second core.

The store decodes and folds in its own process while the child inserts. A thread would
not do: the sqlite3 module takes the GIL back after every row it steps, so a writer
thread and a decoding thread queue behind each other and take longer together than one
after the other (1,000,000 rows inserted 5.7 s, decoded 2.2 s, both in two threads 8.9 s).

The proxy cannot drift from `Tables`: it is a `Tables` to the type checker, and each of
Tables' public methods becomes a message, derived from the method itself (`_CALLS`): its
arguments are decoded in the child by their annotations, and a method that returns a
value is answered (decoded by its return annotation) while one that returns None is only
sent, its error coming with the next answer. Only what is the proxy's own is written
here: `send_events`/`inserted`, which pipeline inserts, and `close`.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import gc
import inspect
import os
import signal
import struct
import subprocess
import sys
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import NoneType, UnionType
from typing import IO, Any, get_args, get_type_hints

import msgspec

from lavalog.projections.service.store.database import Inserted, Location
from lavalog.projections.service.store.locations import location_from_spec
from lavalog.projections.service.store.tables import Tables


class WriterFailed(RuntimeError):
    """The child process writing a bulk load stopped: its error, or that it died."""


@dataclass(frozen=True, slots=True)
class _Call:
    """One of Tables' methods as a message: how the child decodes its arguments, and how
    the parent decodes its answer (None: the method returns nothing and is not answered)."""

    arguments: msgspec.msgpack.Decoder[Any]
    answer: msgspec.msgpack.Decoder[Any] | None


def _wire(hint: Any) -> Any:
    """A parameter's annotation as the child decodes it: bytes as bytearray, which the
    sqlite3 module binds as it is, while bytes first go through its adapter lookup (a
    tenth of an insert's time)."""
    if hint is bytes or set(get_args(hint)) == {bytes, bytearray}:
        return bytearray
    origin, args = getattr(hint, "__origin__", None), get_args(hint)
    if origin is None or not args or isinstance(hint, UnionType):
        return hint
    return origin[tuple(_wire(arg) for arg in args)]


def _call(name: str, method: Callable[..., Any]) -> _Call:
    hints = get_type_hints(method)
    parameters = list(inspect.signature(method).parameters.values())[1:]
    if any(p.kind is not inspect.Parameter.POSITIONAL_OR_KEYWORD for p in parameters):
        raise TypeError(f"Tables.{name} must take plain positional parameters to run remotely")
    wired = [_wire(hints[p.name]) for p in parameters]
    arguments: Any = tuple.__class_getitem__(tuple(wired))  # tuple[*wired]
    returns = hints["return"]
    answer = None if returns is NoneType else msgspec.msgpack.Decoder(returns)
    return _Call(msgspec.msgpack.Decoder(arguments), answer)


class TablesProcess(Tables):
    """`Tables` in a child process: each call is a message, the child answers in order.

    `send_events` does not wait for its answer, so the caller can send the next rows and
    fold the ones already answered while the child inserts."""

    def __init__(self, location: Location, *, durable: bool, read_indexes: bool) -> None:
        environment = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(filter(None, [_ROOT, os.environ.get("PYTHONPATH")])),
        }
        self._process = subprocess.Popen(
            [sys.executable, "-m", __name__],
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
        self._receive(_NOTHING)  # the store is open (or the error that it is not)

    def send_events(self, events: Sequence[bytes]) -> None:
        self._read_ahead(_AHEAD - 1)
        self._send("insert_events", events)
        self._unread += 1

    def inserted(self) -> Inserted:
        if not self._answers:
            self._read_ahead(self._unread - 1)
        return self._answers.popleft()

    def close(self, *, abandon: bool = False) -> None:
        """Wait for the child to have written everything and closed the file. `abandon`
        (a failed bulk load, maybe interrupted in the middle of a message) or after the
        child failed: only end its requests and wait for it to stop."""
        try:
            if self._failure is None and not abandon:
                self._ask("close", _NOTHING)
        finally:
            with contextlib.suppress(OSError):  # a dead child: what was left unsent stays so
                self._requests.close()
            try:
                self._process.wait(10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
            self._answers_in.close()

    def _send(self, method: str, *args: Any) -> None:
        if self._failure is not None:
            raise self._failure
        try:
            _write_frame(self._requests, _encoder.encode((method, args)))
        except OSError:
            self._receive(_NOTHING)  # the child stopped: its error is waiting, else it died
            raise

    def _ask(self, method: str, answer: msgspec.msgpack.Decoder[Any], *args: Any) -> Any:
        self._send(method, *args)
        self._read_ahead(0)  # answers sent before this one come first
        return self._receive(answer)

    def _receive(self, answer: msgspec.msgpack.Decoder[Any]) -> Any:
        if self._failure is not None:
            raise self._failure
        frame = _read_frame(self._answers_in)
        if frame is None:
            ok, value = False, f"it exited (code {self._process.wait()})"
        else:
            ok, raw = _reply.decode(frame)
            value = answer.decode(raw) if ok else _error.decode(raw)
        if not ok:
            self._failure = WriterFailed(f"the store writer process failed: {value}")
            raise self._failure
        return value

    def _read_ahead(self, keep: int) -> None:
        """Read answers to `send_events` until at most `keep` are unread."""
        while self._unread > keep:
            self._answers.append(self._receive(_INSERTED))
            self._unread -= 1


def _remote(name: str, method: Callable[..., Any], answer: Any) -> Callable[..., Any]:
    """The proxy's version of `Tables.<name>`: a message, answered or only sent."""
    if answer is None:

        def send(self: TablesProcess, *args: Any) -> None:
            self._send(name, *args)

        return functools.update_wrapper(send, method)

    def ask(self: TablesProcess, *args: Any) -> Any:
        return self._ask(name, answer, *args)

    return functools.update_wrapper(ask, method)


#: every public method of Tables that the proxy does not write itself, as a message (the
#: proxy's `send_events` sends `insert_events`)
_CALLS = {
    name: _call(name, method)
    for name, method in vars(Tables).items()
    if callable(method) and not name.startswith("_") and name not in vars(TablesProcess)
}
for _name, _each in _CALLS.items():
    setattr(TablesProcess, _name, _remote(_name, getattr(Tables, _name), _each.answer))

_encoder = msgspec.msgpack.Encoder()
_request = msgspec.msgpack.Decoder(tuple[str, msgspec.Raw])
_reply = msgspec.msgpack.Decoder(tuple[bool, msgspec.Raw])
_error = msgspec.msgpack.Decoder(str)
_NOTHING = msgspec.msgpack.Decoder(None)
_INSERTED = msgspec.msgpack.Decoder(Inserted)
_opening = msgspec.msgpack.Decoder(tuple[list[str], bool, bool])
_LENGTH = struct.Struct("<I")
#: What a request pipe holds, where the system allows it (Linux' default maximum).
PIPE_BYTES = 1 << 20
#: Inserts sent ahead of their answers at most: an answer (a few KiB at most) that the
#: parent does not read fills the pipe (64 KiB) and stops the child.
_AHEAD = 8
#: where this copy of lavalog is imported from, for the child to import the same
_ROOT = str(Path(__file__).resolve().parents[3])


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
    """The child: run each call on `tables` and answer those that return a value, until
    `close` or the first error (which is the answer to the next call)."""
    while (frame := _read_frame(requests)) is not None:
        method, arguments = _request.decode(frame)
        if method == "close":
            tables.close()
            _write_frame(answers, _encoder.encode((True, None)))
            return
        call = _CALLS[method]
        try:
            result = getattr(tables, method)(*call.arguments.decode(arguments))
        except Exception as exc:
            _write_frame(answers, _encoder.encode((False, f"{type(exc).__name__}: {exc}")))
            break
        if call.answer is not None:
            _write_frame(answers, _encoder.encode((True, result)))
    tables.close()  # the store went away without closing, or failed: nothing to keep


def main() -> None:
    """`python -m lavalog.projections.service.store.tables_process`: the child of
    TablesProcess. Its first request says which store to open: (location spec, durable,
    read_indexes)."""
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
