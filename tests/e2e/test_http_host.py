"""`lavalog run`'s health and metrics listener: it binds where it is told, and answers other
machines only when each caller is authenticated.

With `--kubernetes-auth` (the manifests), `/metrics` asks for a Kubernetes token and the
simulated API server reviews it (TokenReview, then a SubjectAccessReview of `get` on the
path): no token is a 401, a user without a `nonResourceURLs` grant a 403, the account
Prometheus scrapes with (deploy/base/rbac.yaml, `lavalog-metrics`) gets the metrics, and
the kubelet's probes need no token. Without it, an address other than a loopback one is
refused at start."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
import pytest
import yaml

from lavalog.cli.main import main
from lavalog.controller.app import ControllerConfig, run_controller
from lavalog.controller.kafka import KafkaSettings
from lavalog.simulator import registry
from lavalog.simulator.server import SimulatedCluster
from tests.deploy.conftest import DEPLOY
from tests.simulator.test_kubectl import kubectl_path
from tests.simulator.test_reviews import binding

__all__ = ["kubectl_path"]  # the fixture

pytestmark = pytest.mark.integration

SYSTEM = "lavalog-system"


@asynccontextmanager
async def controller(
    kafka: KafkaSettings, cluster: SimulatedCluster, *args: str
) -> AsyncIterator[dict[str, Any]]:
    """`lavalog run --components decider ARGS...` in a child process, until it has said
    "controller started" (that log line is yielded); then SIGTERM, and a clean exit."""
    process = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "lavalog.cli.main", "run", "--components", "decider"),
        *("--kubeconfig", str(cluster.kubeconfig_path)),
        *("--bootstrap-servers", kafka.bootstrap_servers, "--log-json", *args),
        env={
            **{k: v for k, v in os.environ.items() if k != "LAVALOG_KUBERNETES_AUTH"},
            "LAVALOG_TOPIC_PREFIX": kafka.topic_prefix,
        },
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        assert process.stderr is not None
        async with asyncio.timeout(60):
            while True:
                line = json.loads(await process.stderr.readline())
                if line["event"] == "controller started":
                    break
        yield line
    finally:
        process.terminate()
        await process.wait()
    assert process.returncode == 0


@pytest.mark.cluster(nodes=1)
async def test_the_health_listener_binds_the_address_given(
    e2e_kafka: KafkaSettings, sim_cluster: SimulatedCluster
) -> None:
    # The same port on 127.0.0.1 is held here, bound but not listening: a listener on
    # every address could not start, and nothing else (another test's server) can take it
    # and answer the connection below, which is refused only if it finds no listener.
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        port = held.getsockname()[1]
        args = ("--http-host", "127.0.0.2", "--http-port", str(port))
        async with controller(e2e_kafka, sim_cluster, *args) as started:
            assert started["http_host"] == "127.0.0.2"
            assert started["http_access"] == "no authentication: this machine only"
            assert started["http_port"] == port
            async with aiohttp.ClientSession() as http:
                async with http.get(f"http://127.0.0.2:{port}/healthz") as answer:
                    assert (answer.status, await answer.text()) == (200, "ok\n")
                async with http.get(f"http://127.0.0.2:{port}/metrics") as answer:
                    assert answer.status == 200  # this machine only: no token asked for
                with pytest.raises(aiohttp.ClientConnectionError):
                    await http.get(f"http://127.0.0.1:{port}/healthz")


def _install_rbac(cluster: SimulatedCluster) -> None:
    """deploy/base/rbac.yaml as the manifests install it; team-a's `reader` may get
    Volcano Jobs (lavalog-job-reader) and nothing else."""
    objects = cluster.objects
    for namespace in (SYSTEM, "team-a"):
        objects.create(registry.NAMESPACE, "", {"metadata": {"name": namespace}})
    for doc in yaml.safe_load_all((DEPLOY / "base" / "rbac.yaml").read_text()):
        resource = registry.by_kind(doc["apiVersion"], doc["kind"])
        assert resource is not None, doc["kind"]
        objects.create(resource, doc["metadata"].get("namespace", ""), doc)
    objects.create(registry.SERVICE_ACCOUNT, "team-a", {"metadata": {"name": "reader"}})
    job_reader = {"kind": "ClusterRole", "metadata": {"name": "lavalog-job-reader"}}
    readers = binding(
        "RoleBinding",
        "lavalog-readers",
        job_reader,
        [{"kind": "ServiceAccount", "name": "reader", "namespace": "team-a"}],
    )
    readers["metadata"]["namespace"] = "team-a"
    objects.create(registry.ROLE_BINDING, "team-a", readers)


async def _create_token(kubectl: str, cluster: SimulatedCluster, namespace: str, name: str) -> str:
    """`kubectl create token NAME -n NAMESPACE`, as docs/install.md has a human do."""
    made = await asyncio.create_subprocess_exec(
        kubectl,
        *("--kubeconfig", str(cluster.kubeconfig_path), "create", "token", name, "-n", namespace),
        stdout=asyncio.subprocess.PIPE,
    )
    out, _ = await made.communicate()
    assert made.returncode == 0
    return out.decode().strip()


@pytest.mark.cluster(nodes=1)
async def test_metrics_need_a_token_whose_user_may_get_them(
    e2e_kafka: KafkaSettings, sim_cluster: SimulatedCluster, kubectl_path: str
) -> None:
    _install_rbac(sim_cluster)
    scraper = await _create_token(kubectl_path, sim_cluster, SYSTEM, "lavalog-metrics")
    reader = await _create_token(kubectl_path, sim_cluster, "team-a", "reader")
    args = ("--kubernetes-auth", "--http-port", "0")
    async with controller(e2e_kafka, sim_cluster, *args) as started:
        assert started["http_access"] == "Kubernetes tokens and RBAC, reviewed by --kubeconfig"
        url = f"http://127.0.0.1:{started['http_port']}"
        async with aiohttp.ClientSession() as http:
            async with http.get(f"{url}/metrics") as answer:
                assert answer.status == 401
                assert answer.headers["WWW-Authenticate"] == 'Bearer realm="lavalog"'
            wrong = {"Authorization": "Bearer made-up"}
            async with http.get(f"{url}/metrics", headers=wrong) as answer:
                assert answer.status == 401
                assert 'error="invalid_token"' in answer.headers["WWW-Authenticate"]
            async with http.get(f"{url}/metrics", headers=_bearer(reader)) as answer:
                assert answer.status == 403
                assert (await answer.json())["error"] == (
                    'forbidden: User "system:serviceaccount:team-a:reader" cannot get path'
                    ' "/metrics"'
                )
            async with http.get(f"{url}/metrics", headers=_bearer(scraper)) as answer:
                assert answer.status == 200
                assert "lavalog_decider_ready" in await answer.text()
            # the kubelet's probes carry no token
            async with http.get(f"{url}/healthz") as answer:
                assert (answer.status, await answer.text()) == (200, "ok\n")
            async with asyncio.timeout(60):
                while True:
                    async with http.get(f"{url}/readyz") as answer:
                        assert answer.status in (200, 503)  # never 401
                        if answer.status == 200:
                            break
                    await asyncio.sleep(0.2)


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.0.2.1", ""])
def test_without_authentication_only_this_machine_is_served(
    host: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LAVALOG_KUBERNETES_AUTH", raising=False)
    code = main(["run", "--http-host", host, "--bootstrap-servers", "127.0.0.1:1"])
    err = capsys.readouterr().err
    assert code == 2
    shown = host or "0.0.0.0"
    assert err.startswith(f"lavalog run: --http-host {shown} would serve the controller's /metrics")
    assert "--kubernetes-auth" in err and err.count("\n") == 1


async def test_the_controller_refuses_before_it_connects() -> None:
    """The same refusal from `run_controller`, before it reads a kubeconfig or meets Kafka."""
    config = ControllerConfig(
        kafka=KafkaSettings(bootstrap_servers="127.0.0.1:1"),
        kubeconfig="/nonexistent",
        http_host="0.0.0.0",
    )
    with pytest.raises(ValueError, match=r"^--http-host 0\.0\.0\.0 would serve"):
        await run_controller(config)
