"""Processes and printing shared by the system benchmarks (pipeline, reaction, scale, chaos).

A benchmark runs what a deployment runs as separate processes as separate processes:
the development broker (tansu), the simulated cluster (`lavalog sim`) and the controller
(`run_controller` in a child interpreter, so that its rate limit can be raised), and
keeps for itself only the load it makes and the clocks it reads.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import aiohttp
from aiokafka import TopicPartition

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lavalog.controller.broker import free_port
from lavalog.controller.kafka import KafkaSettings, create_consumer, topic_name

ROOT = Path(__file__).resolve().parents[1]
ALL_COMPONENTS = "watchers,decider,actuator"
#: how the controller's components are laid out in processes: all in one, or one each
LAYOUTS = {"one": (ALL_COMPONENTS,), "components": tuple(ALL_COMPONENTS.split(","))}
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
T = TypeVar("T")


def run_benchmark(main: Coroutine[Any, Any, T]) -> T:
    """Run a benchmark's `main` until it returns or the benchmark is sent SIGTERM (or
    Ctrl-C): either cancels it, so that its context managers stop the processes it started
    (broker, simulated cluster, controllers); Python's own SIGTERM ends the process at
    once and leaves them running and writing on."""

    async def cancelled_by_sigterm() -> T:
        task = asyncio.current_task()
        assert task is not None
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, task.cancel)
        return await main

    try:
        return asyncio.run(cancelled_by_sigterm())
    except asyncio.CancelledError:
        say("stopped by SIGTERM")
        sys.exit(128 + signal.SIGTERM)
    except KeyboardInterrupt:
        say("stopped by Ctrl-C")
        sys.exit(128 + signal.SIGINT)


def say(text: str) -> None:
    print(text, flush=True)


def kafka_settings(bootstrap: str, partitions: int, prefix: str = "bench.") -> KafkaSettings:
    """Settings for the development broker: short group timeouts, so that groups form in ~1 s."""
    return KafkaSettings(
        bootstrap_servers=bootstrap,
        topic_prefix=prefix,
        observed_partitions=partitions,
        decisions_partitions=partitions,
        state_partitions=partitions,
        session_timeout_ms=2_000,
        heartbeat_interval_ms=200,
    )


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    """Print rows as aligned columns (the first left-aligned, the others right-aligned)."""
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]

    def line(row: Sequence[str]) -> str:
        rest = [cell.rjust(width) for cell, width in zip(row[1:], widths[1:], strict=True)]
        cells = [row[0].ljust(widths[0]), *rest]
        return "  ".join(cells).rstrip()

    say("")
    say(line(header))
    say(line(["-" * w for w in widths]))
    for row in rows:
        say(line(row))


async def bounded(count: int, concurrency: int, make: Callable[[int], Awaitable[None]]) -> None:
    """Call `make(0..count-1)` with at most `concurrency` calls in flight."""
    indexes = iter(range(count))

    async def worker() -> None:
        for index in indexes:
            await make(index)

    await asyncio.gather(*(worker() for _ in range(concurrency)))


async def until(condition: Callable[[], bool], *, every: float = 0.001) -> None:
    """Poll `condition` (state that a listener or a service changes) until it holds."""
    while True:
        if condition():
            return
        await asyncio.sleep(every)


@dataclass(frozen=True)
class Cluster:
    url: str
    kubeconfig: Path
    #: the `lavalog sim` process (`cpu_seconds(cluster.pid)`)
    pid: int


@asynccontextmanager
async def simulator_process(
    *, nodes: int, pods_per_node: int, time_scale: float, history: int
) -> AsyncIterator[Cluster]:
    """`lavalog sim` in a child process: the API server is not the benchmark's process."""
    with tempfile.TemporaryDirectory(prefix="lavalog-bench-") as tmp:
        kubeconfig = Path(tmp) / "kubeconfig"
        command = [
            sys.executable, "-m", "lavalog.cli.main", "sim", "--port", "0",
            "--nodes", str(nodes), "--node-capacity", f"cpu=1000,memory=4Ti,pods={pods_per_node}",
            "--time-scale", str(time_scale), "--history-size", str(history),
            "--kubeconfig", str(kubeconfig),
        ]  # fmt: skip
        proc = await asyncio.create_subprocess_exec(
            *command, cwd=ROOT, stdout=subprocess.PIPE, env=ENV
        )
        assert proc.stdout is not None
        try:
            line = (await asyncio.wait_for(proc.stdout.readline(), 30)).decode()
            yield Cluster(line.split(" at ")[1].split()[0], kubeconfig, proc.pid)
        finally:
            await stop_child(proc)


async def stop_child(proc: asyncio.subprocess.Process) -> None:
    """Terminate a child process unless it has ended already: a child that died during the
    run then leaves its own failure as the news, not a ProcessLookupError of the cleanup."""
    if proc.returncode is None:
        proc.terminate()
    await proc.wait()


@dataclass(frozen=True)
class ControllerChild:
    #: its /metrics URL
    metrics: str
    pid: int

    def memory(self) -> tuple[int, int]:
        """(resident, peak resident) bytes, from /proc (Linux)."""
        fields = dict(
            line.split(":", 1) for line in Path(f"/proc/{self.pid}/status").read_text().splitlines()
        )
        return _kib(fields["VmRSS"]), _kib(fields["VmHWM"])

    def cpu_seconds(self) -> float:
        return cpu_seconds(self.pid)


def cpu_seconds(pid: int) -> float:
    """User and system CPU time a process has used so far, from /proc (Linux): what a run
    cost it whatever else the machine was doing."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _kib(value: str) -> int:
    return int(value.split()[0]) * 1024


@asynccontextmanager
async def controller_process(**options: Any) -> AsyncIterator[ControllerChild]:
    """`controller_processes` (same options) with every component in one process."""
    async with controller_processes(**options) as (child,):
        yield child


@asynccontextmanager
async def controller_processes(
    *,
    bootstrap: str,
    kubeconfig: Path,
    partitions: int,
    qps: float,
    burst: int,
    event_loop: str = "auto",
    layout: Sequence[str] = (ALL_COMPONENTS,),
    source: Path = ROOT,
    identity: str | None = None,
    fetch_max_wait_ms: int | None = None,
    lease: float = 5.0,
) -> AsyncIterator[list[ControllerChild]]:
    """One controller child process per entry of `layout` (comma-separated components),
    each once its /readyz answers 200, running the `lavalog` package found in `source`
    (a checkout of another commit, to compare with); `fetch_max_wait_ms` replaces the
    settings' own; `lease`: the Lease duration in seconds. SIGTERM stops them cleanly."""
    options = [
        "--bootstrap", bootstrap, "--kubeconfig", str(kubeconfig),
        "--partitions", str(partitions), "--qps", str(qps), "--burst", str(burst),
        "--event-loop", event_loop, "--source", str(source), "--lease", str(lease),
        *(("--identity", identity) if identity else ()),
        *(("--fetch-max-wait-ms", str(fetch_max_wait_ms)) if fetch_max_wait_ms else ()),
    ]  # fmt: skip
    async with contextlib.AsyncExitStack() as stack:
        children = [
            await stack.enter_async_context(
                _controller_child([*options, "--components", components])
            )
            for components in layout
        ]
        yield children


@asynccontextmanager
async def _controller_child(options: Sequence[str]) -> AsyncIterator[ControllerChild]:
    command = [sys.executable, str(ROOT / "bench" / "controller_child.py"), *options]
    proc = await asyncio.create_subprocess_exec(*command, cwd=ROOT, stdout=subprocess.PIPE, env=ENV)
    assert proc.stdout is not None
    try:
        port = int((await asyncio.wait_for(proc.stdout.readline(), 30)).decode())
        base = f"http://127.0.0.1:{port}"
        await _until_ready(f"{base}/readyz", within=READY_SECONDS)
        yield ControllerChild(f"{base}/metrics", proc.pid)
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGTERM)
        await proc.wait()


#: how long a controller may take to be ready: a decider that restores many jobs' states
#: and an actuator that takes over a backlog, on a loaded machine
READY_SECONDS = 180.0


async def _until_ready(url: str, *, within: float) -> None:
    """Until `url` answers 200; TimeoutError naming the components not ready."""
    answer = ""
    async with aiohttp.ClientSession() as session:
        try:
            async with asyncio.timeout(within):
                while True:
                    async with session.get(url) as response:
                        if response.status == 200:
                            return
                        answer = await response.text()
                    await asyncio.sleep(0.1)
        except TimeoutError:
            raise TimeoutError(f"not ready within {within:.0f} s: {answer.strip()}") from None


async def metric_series(url: str, name: str) -> list[float]:
    """The value of every series of one family on a /metrics page (a Prometheus counter or
    gauge, labelled or not); none when it has no series (yet)."""
    async with aiohttp.ClientSession() as session, session.get(url) as response:
        text = await response.text()
    starts = tuple(name + suffix + end for suffix in ("", "_total") for end in (" ", "{"))
    return [float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(starts)]


async def metric(url: str, name: str) -> float:
    """One value from a /metrics page: an unlabelled counter or gauge, or the sum of a
    labelled family's series."""
    values = await metric_series(url, name)
    if not values:
        raise KeyError(name)
    return sum(values)


class LavalogRun:
    """`lavalog run` in a child process, as a deployment runs it: restartable, SIGKILLable,
    its output appended to one file. The chaos run and the crash tests use it."""

    def __init__(
        self,
        kafka: KafkaSettings,
        kubeconfig: Path,
        output: Path,
        identity: str,
        options: Sequence[str] = (),
    ) -> None:
        self.kafka = kafka
        self.kubeconfig = kubeconfig
        self.output = output
        self.identity = identity
        #: further `lavalog run` options (`--lease-duration 5`, ...)
        self.options = options
        self.process: asyncio.subprocess.Process | None = None
        self.port = 0

    async def start(self) -> None:
        kafka = self.kafka
        env = {
            **ENV,
            "LAVALOG_TOPIC_PREFIX": kafka.topic_prefix,
            "LAVALOG_OBSERVED_PARTITIONS": str(kafka.observed_partitions),
            "LAVALOG_DECISIONS_PARTITIONS": str(kafka.decisions_partitions),
            "LAVALOG_STATE_PARTITIONS": str(kafka.state_partitions),
            "LAVALOG_SESSION_TIMEOUT_MS": str(kafka.session_timeout_ms),
            "LAVALOG_HEARTBEAT_INTERVAL_MS": str(kafka.heartbeat_interval_ms),
        }
        self.port = free_port()
        with self.output.open("ab") as out:
            self.process = await asyncio.create_subprocess_exec(
                *(sys.executable, "-m", "lavalog.cli.main", "run"),
                *("--kubeconfig", str(self.kubeconfig)),
                *("--bootstrap-servers", kafka.bootstrap_servers),
                *("--http-port", str(self.port), "--identity", self.identity, "--log-json"),
                *self.options,
                cwd=ROOT,
                env=env,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=out,
                stderr=out,
            )

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.returncode is None

    async def ready(self, within: float = 30.0) -> None:
        """Until /readyz answers 200; AssertionError with the output's tail if it died."""
        url = f"http://127.0.0.1:{self.port}/readyz"
        async with aiohttp.ClientSession() as http, asyncio.timeout(within):
            while True:
                assert self.running, self.tail()
                try:
                    async with http.get(url) as answer:
                        if answer.status == 200:
                            return
                except aiohttp.ClientError:
                    pass
                await asyncio.sleep(0.1)

    def kill(self) -> None:
        """SIGKILL: no clean shutdown, no last commit, no Lease release."""
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)

    def log_task_stacks(self) -> None:
        """SIGUSR1: the process logs where each of its tasks waits (controller/task_stacks.py)."""
        if self.running:
            assert self.process is not None
            self.process.send_signal(signal.SIGUSR1)

    async def restart(self) -> None:
        assert self.process is not None
        await self.process.wait()
        await self.start()

    async def stop(self) -> None:
        if self.process is None or self.process.returncode is not None:
            return
        self.process.terminate()
        try:
            await asyncio.wait_for(self.process.wait(), timeout=15)
        except TimeoutError:
            self.process.kill()
            await self.process.wait()

    def tail(self) -> str:
        return self.output.read_text(errors="replace")[-4000:]


async def read_topic(settings: KafkaSettings, topic: str, partitions: int) -> list[Any]:
    """Every record of a topic from its beginning to its current end."""
    name = topic_name(settings, topic)
    consumer = create_consumer(settings, group_id=None)
    await consumer.start()
    try:
        tps = [TopicPartition(name, p) for p in range(partitions)]
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        records: list[Any] = []
        async with asyncio.timeout(30):
            while True:
                batch = await consumer.getmany(*tps, timeout_ms=200)
                for messages in batch.values():
                    records.extend(messages)
                ends = [consumer.highwater(tp) for tp in tps]
                positions = [await consumer.position(tp) for tp in tps]
                if not batch and all(
                    end is not None and at >= end for end, at in zip(ends, positions, strict=True)
                ):
                    return records
    finally:
        await consumer.stop()
