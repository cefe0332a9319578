"""`lavalog sim`: flags shape the cluster and the kubeconfig points at it."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import aiohttp
import yaml

ROOT = Path(__file__).resolve().parents[2]


async def test_lavalog_sim_serves_the_configured_nodes(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "sim.kubeconfig"
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "lavalog.cli.main", "sim", "--port", "0", "--kubeconfig", str(kubeconfig),
        "--nodes", "3", "--node-capacity", "cpu=4,nvidia.com/gpu=2",
        cwd=ROOT, stdout=subprocess.PIPE,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        first = (await asyncio.wait_for(proc.stdout.readline(), 20)).decode()
        assert "simulated cluster at http://127.0.0.1:" in first
        server = yaml.safe_load(kubeconfig.read_text())["clusters"][0]["cluster"]["server"]
        async with aiohttp.ClientSession() as session, session.get(f"{server}/api/v1/nodes") as r:
            nodes = (await r.json())["items"]
        assert [n["metadata"]["name"] for n in nodes] == ["node-1", "node-2", "node-3"]
        assert nodes[0]["status"]["capacity"] == {
            "cpu": "4", "memory": "32Gi", "nvidia.com/gpu": "2", "pods": "110"
        }  # fmt: skip
    finally:
        proc.terminate()
        assert await asyncio.wait_for(proc.wait(), 10) == 0
