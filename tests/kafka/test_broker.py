"""The development broker: starts, answers, stops without leaving a process behind."""

from __future__ import annotations

import asyncio
import signal
import socket
import sys
from pathlib import Path

import pytest
from aiokafka.admin import AIOKafkaAdminClient

from lavalog.controller.broker import BrokerStartError, DevelopmentBroker, free_port
from tests.processes import alive

pytestmark = pytest.mark.integration


async def _topics(bootstrap_servers: str) -> list[str]:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap_servers)
    await admin.start()
    try:
        return list(await admin.list_topics())
    finally:
        await admin.close()


async def test_starts_answers_and_stops_without_leaving_a_process() -> None:
    async with DevelopmentBroker() as broker:
        pid = broker.pid
        assert pid is not None
        assert broker.bootstrap_servers.startswith("127.0.0.1:")
        assert await _topics(broker.bootstrap_servers) == []
    assert not alive(pid)


def test_sync_form_serves_code_without_an_event_loop() -> None:
    with DevelopmentBroker() as broker:
        pid = broker.pid
        assert pid is not None and alive(pid)
    assert not alive(pid)


async def test_a_taken_port_is_refused_rather_than_shared() -> None:
    async with DevelopmentBroker() as broker:
        with pytest.raises(BrokerStartError, match="already in use"):
            async with DevelopmentBroker(port=broker.port):
                pass


async def test_a_broker_that_does_not_answer_in_time_is_an_error_with_its_output() -> None:
    with pytest.raises(BrokerStartError, match="did not answer"):
        async with DevelopmentBroker(startup_timeout=0.0):
            pass


async def test_cli_runs_in_the_foreground_and_stops_on_sigterm() -> None:
    port = free_port()
    process = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "lavalog.cli.main", "broker", "--port", str(port)),
        "--create-topics",
        stdout=asyncio.subprocess.PIPE,
    )
    try:
        assert process.stdout is not None
        first = await asyncio.wait_for(process.stdout.readline(), timeout=30)
        assert first.decode().strip() == f"bootstrap servers: 127.0.0.1:{port}"
        assert (await process.stdout.readline()).startswith(b"topics: lavalog.observed")
        assert "lavalog.state" in await _topics(f"127.0.0.1:{port}")
        process.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(process.wait(), timeout=15) == 0
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert not _port_taken(port), "the broker outlived `lavalog broker`"


def _port_taken(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


def test_a_free_port_is_drawn_outside_the_range_the_kernel_hands_out_itself() -> None:
    # an outgoing connection anywhere on the machine cannot take it before the server binds it
    low, high = map(int, Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
    ports = {free_port() for _ in range(20)}
    assert all(not low <= port <= high for port in ports)
    assert len(ports) > 1  # drawn, not one fixed port that two callers would share
    for port in ports:
        with socket.socket() as server:
            server.bind(("127.0.0.1", port))
