"""Volcano's CRDs belong to Volcano: no overlay holds one, so uninstalling lavalog
(`kubectl delete -k`) leaves every CRD and every Volcano object in place; the CRDs are a
kustomization of their own (`deploy/crds`) for a cluster without Volcano."""

from __future__ import annotations

import asyncio
import subprocess
from typing import Any

import pytest
import yaml

from lavalog.apimachinery import crds
from lavalog.simulator import registry
from lavalog.simulator.server import SimulatedCluster
from tests.deploy.conftest import CRDS, DEPLOY, OVERLAYS, is_operators

Obj = dict[str, Any]

#: the API groups whose kinds Volcano defines (volcano-sh/apis pkg/apis/*)
VOLCANO_GROUPS = ("batch.volcano.sh", "bus.volcano.sh", "scheduling.volcano.sh")


def _group(doc: Obj) -> str:
    return str(doc["apiVersion"]).rpartition("/")[0]


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_no_overlay_holds_a_crd_or_a_volcano_object(
    rendered: dict[str, list[Obj]], overlay: str
) -> None:
    docs = rendered[overlay]
    assert docs
    assert [d["metadata"]["name"] for d in docs if d["kind"] == "CustomResourceDefinition"] == []
    assert [d["metadata"]["name"] for d in docs if _group(d) in VOLCANO_GROUPS] == []


def test_the_crds_kustomization_holds_what_the_simulated_cluster_serves(
    rendered: dict[str, list[Obj]],
) -> None:
    docs = rendered[CRDS]
    assert {d["kind"] for d in docs} == {"CustomResourceDefinition"}
    assert {d["metadata"]["name"] for d in docs} == set(crds.definitions())
    assert {d["spec"]["group"] for d in docs} == set(VOLCANO_GROUPS)


def _kubectl(
    kubectl: str, cluster: SimulatedCluster, *args: str, docs: list[Obj] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [kubectl, "--kubeconfig", str(cluster.kubeconfig_path), *args],
        input=yaml.safe_dump_all(docs) if docs is not None else None,
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.mark.integration
@pytest.mark.cluster(nodes=0)
@pytest.mark.parametrize("overlay", ["overlays/dev", "overlays/production"])
async def test_uninstalling_an_overlay_leaves_the_crds_and_volcano_objects(
    kubectl: str, rendered: dict[str, list[Obj]], sim_cluster: SimulatedCluster, overlay: str
) -> None:
    """Volcano installed (its CRDs, a Queue, a Job), lavalog installed beside it, then
    uninstalled: everything of Volcano's is still there, nothing of lavalog's is."""
    run = asyncio.to_thread
    volcano = await run(_kubectl, kubectl, sim_cluster, "create", "-k", str(DEPLOY / CRDS))
    assert volcano.returncode == 0, volcano.stderr
    job = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "training", "namespace": "default"},
        "spec": {
            "minAvailable": 1,
            "tasks": [
                {
                    "name": "worker",
                    "replicas": 1,
                    "template": {"spec": {"containers": [{"name": "main", "image": "busybox"}]}},
                }
            ],
        },
    }
    created = await run(_kubectl, kubectl, sim_cluster, "create", "-f", "-", docs=[job])
    assert created.returncode == 0, created.stderr
    # the operators' kinds are not served without their operators
    lavalog = [doc for doc in rendered[overlay] if not is_operators(doc)]
    installed = await run(_kubectl, kubectl, sim_cluster, "apply", "-f", "-", docs=lavalog)
    assert installed.returncode == 0, installed.stderr
    assert sim_cluster.objects.find(registry.DEPLOYMENT, "lavalog-system", "lavalog-controller")

    # the namespace goes first and takes its objects with it (--ignore-not-found: the
    # simulated namespace controller may empty it before kubectl reaches them)
    removed = await run(
        _kubectl, kubectl, sim_cluster, "delete", "--ignore-not-found", "-f", "-", docs=lavalog
    )

    assert removed.returncode == 0, removed.stderr
    objects = sim_cluster.objects
    assert objects.find(registry.DEPLOYMENT, "lavalog-system", "lavalog-controller") is None
    assert objects.find(registry.CLUSTER_ROLE, "", "lavalog") is None
    for name in crds.definitions():
        assert objects.find(registry.CRD, "", name) is not None, name
    assert objects.find(registry.JOB, "default", "training") is not None
    assert objects.find(registry.QUEUE, "", "default") is not None
    listed = await run(
        _kubectl, kubectl, sim_cluster, "get", "vcjob", "-n", "default", "-o", "name"
    )
    assert listed.stdout.split() == ["job.batch.volcano.sh/training"]


def test_the_crds_are_their_own_kustomization_and_no_other_includes_them() -> None:
    """deploy/crds is applied on its own; no kustomization lists it as a resource."""
    for path in DEPLOY.rglob("kustomization.yaml"):
        resources = yaml.safe_load(path.read_text()).get("resources", [])
        assert not any(str(r).rstrip("/").endswith("crds") for r in resources), path
