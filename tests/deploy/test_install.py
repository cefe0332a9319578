"""Every overlay installs: `kubectl apply --dry-run=server` of what it renders succeeds
against the simulated API server (Kubernetes' own kinds and lavalog's CRDs, checked by
their schemas with fieldValidation=Strict), and the operators' kinds (Strimzi's
KafkaTopic, the Prometheus Operator's ServiceMonitor and PrometheusRule) are valid by the
CRDs those operators install today (copies in `operator_crds/`, see its README)."""

from __future__ import annotations

import asyncio
import copy
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from lavalog.apimachinery import kube_schema, schema
from lavalog.simulator import registry
from lavalog.simulator.server import SimulatedCluster
from tests.deploy.conftest import OVERLAYS, is_operators

pytestmark = [pytest.mark.integration, pytest.mark.cluster(nodes=0)]

OPERATOR_CRDS = Path(__file__).resolve().parent / "operator_crds"

Obj = dict[str, Any]


def operator_schemas() -> dict[tuple[str, str], Obj]:
    """(apiVersion, kind) -> the openAPIV3Schema of each version the operators serve."""
    found = {}
    for path in sorted(OPERATOR_CRDS.glob("*.yaml")):
        crd = yaml.safe_load(path.read_text())
        spec = crd["spec"]
        for version in spec["versions"]:
            if version.get("served"):
                key = (f"{spec['group']}/{version['name']}", spec["names"]["kind"])
                found[key] = version["schema"]["openAPIV3Schema"]
    return found


async def dry_run_apply(
    kubectl: str, cluster: SimulatedCluster, docs: list[Obj]
) -> subprocess.CompletedProcess[str]:
    return await asyncio.to_thread(
        subprocess.run,
        [
            kubectl,
            *("--kubeconfig", str(cluster.kubeconfig_path)),
            *("apply", "--dry-run=server", "--validate=strict", "-f", "-"),
        ],
        input=yaml.safe_dump_all(docs),
        capture_output=True,
        text=True,
        check=False,
    )


async def create_namespaces(kubectl: str, cluster: SimulatedCluster, docs: list[Obj]) -> None:
    """What an install creates first: a dry run of objects in a namespace that does not
    exist yet fails on a real cluster too."""
    namespaces = [doc for doc in docs if doc["kind"] == "Namespace"]
    result = await asyncio.to_thread(
        subprocess.run,
        [kubectl, "--kubeconfig", str(cluster.kubeconfig_path), "apply", "-f", "-"],
        input=yaml.safe_dump_all(namespaces),
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("overlay", OVERLAYS)
async def test_the_overlay_applies_with_a_server_side_dry_run(
    kubectl: str, rendered: dict[str, list[Obj]], sim_cluster: SimulatedCluster, overlay: str
) -> None:
    docs = [doc for doc in rendered[overlay] if not is_operators(doc)]
    await create_namespaces(kubectl, sim_cluster, docs)
    before = dict(sim_cluster.api_calls)

    result = await dry_run_apply(kubectl, sim_cluster, docs)

    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == len(docs) and all(line.endswith("(server dry run)") for line in lines)
    # each object but the namespace (made above) was sent to the API server, which
    # stored none of them
    created = sum(
        n - before.get(call, 0)
        for call, n in sim_cluster.api_calls.items()
        if call.startswith("create ")
    )
    assert created == len([doc for doc in docs if doc["kind"] != "Namespace"])
    assert (
        sim_cluster.objects.find(registry.DEPLOYMENT, "lavalog-system", "lavalog-controller")
        is None
    )


async def test_a_misspelt_field_fails_the_dry_run(
    kubectl: str, rendered: dict[str, list[Obj]], sim_cluster: SimulatedCluster
) -> None:
    """The dry run checks what a real API server checks: one unknown field is refused."""
    docs = [doc for doc in rendered["base"] if doc["kind"] in ("Namespace", "Deployment")]
    await create_namespaces(kubectl, sim_cluster, docs)
    broken = copy.deepcopy(docs)
    deployment = next(doc for doc in broken if doc["kind"] == "Deployment")
    deployment["spec"]["template"]["spec"]["containers"][0]["livenesProbe"] = {}

    result = await dry_run_apply(kubectl, sim_cluster, broken)

    assert result.returncode != 0
    assert 'unknown field "spec.template.spec.containers[0].livenesProbe"' in result.stderr


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_operator_kinds_are_valid_by_the_operators_crds(
    rendered: dict[str, list[Obj]], overlay: str
) -> None:
    schemas = operator_schemas()
    docs = [doc for doc in rendered[overlay] if is_operators(doc)]
    assert {doc["kind"] for doc in docs} >= {"ServiceMonitor", "PrometheusRule"}
    for doc in docs:
        key = (doc["apiVersion"], doc["kind"])
        served = sorted(v for v, k in schemas if k == doc["kind"])
        assert key in schemas, f"{doc['kind']} {doc['apiVersion']} is not served (only {served})"
        found = copy.deepcopy(schemas[key])
        found["properties"]["metadata"] = kube_schema.of("V1ObjectMeta")
        findings = schema.apply(found, copy.deepcopy(doc), defaults=False)
        assert (findings.unknown, findings.invalid) == ([], []), doc["metadata"]["name"]
