"""`lavalog run --http-host`: the health and metrics listener binds where it is told."""

from __future__ import annotations

import asyncio
import json
import os
import sys

import aiohttp
import pytest

from lavalog.controller.kafka import KafkaSettings
from lavalog.simulator.server import SimulatedCluster

pytestmark = pytest.mark.integration


@pytest.mark.cluster(nodes=1)
async def test_the_health_listener_binds_the_address_given(
    e2e_kafka: KafkaSettings, sim_cluster: SimulatedCluster
) -> None:
    controller = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "lavalog.cli.main", "run", "--components", "decider"),
        *("--kubeconfig", str(sim_cluster.kubeconfig_path)),
        *("--bootstrap-servers", e2e_kafka.bootstrap_servers, "--log-json"),
        *("--http-host", "127.0.0.2", "--http-port", "0"),
        env={**os.environ, "LAVALOG_TOPIC_PREFIX": e2e_kafka.topic_prefix},
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        assert controller.stderr is not None
        async with asyncio.timeout(60):
            while True:
                line = json.loads(await controller.stderr.readline())
                if line["event"] == "controller started":
                    break
        assert line["http_host"] == "127.0.0.2"
        async with aiohttp.ClientSession() as http:
            async with http.get(f"http://127.0.0.2:{line['http_port']}/healthz") as answer:
                assert (answer.status, await answer.text()) == (200, "ok\n")
            with pytest.raises(aiohttp.ClientConnectionError):
                await http.get(f"http://127.0.0.1:{line['http_port']}/healthz")
    finally:
        controller.terminate()
        await controller.wait()
    assert controller.returncode == 0
