"""kubectl for rendering the Kustomize overlays: the one on PATH, else Debian's `kubectl`
package installed once (dl.k8s.io is out of reach where CI runs; the package registry is not);
the controller's ClusterRole as a set of grants."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
OVERLAYS = ("base", "overlays/dev", "overlays/production")
#: Volcano's CRDs, a kustomization of their own for clusters without Volcano
CRDS = "crds"
#: API groups whose kinds a cluster serves only once their operator is installed
OPERATOR_GROUPS = ("kafka.strimzi.io", "monitoring.coreos.com")
#: (API group, resource, verb), as a ClusterRole rule grants and RBAC checks a request
Grant = tuple[str, str, str]


def is_operators(doc: dict[str, Any]) -> bool:
    """Whether `doc` is a Strimzi or Prometheus Operator kind."""
    return str(doc["apiVersion"]).split("/")[0] in OPERATOR_GROUPS


def cluster_role_grants() -> set[Grant]:
    """Every grant of the controller's ClusterRole in deploy/base/rbac.yaml."""
    documents = yaml.safe_load_all((DEPLOY / "base" / "rbac.yaml").read_text())
    (role,) = [
        doc
        for doc in documents
        if doc and doc["kind"] == "ClusterRole" and doc["metadata"]["name"] == "lavalog"
    ]
    return {
        (group, resource, verb)
        for rule in role["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }


def _install_kubectl() -> str | None:
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        return None
    for argv in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", "kubectl"]):
        if subprocess.run(argv, capture_output=True, check=False).returncode != 0:
            return None
    return shutil.which("kubectl")


@pytest.fixture(scope="session")
def kubectl() -> str:
    found = shutil.which("kubectl") or _install_kubectl()
    if found is None:
        pytest.skip("kubectl is not on PATH and could not be installed with apt-get")
    return found


@pytest.fixture(scope="session")
def rendered(kubectl: str) -> dict[str, list[dict[str, Any]]]:
    """Each overlay (and the CRDs' kustomization) as `kubectl kustomize` renders it."""
    out = {}
    for overlay in (*OVERLAYS, CRDS):
        result = subprocess.run(
            [kubectl, "kustomize", str(DEPLOY / overlay)],
            capture_output=True,
            text=True,
            check=False,
        )
        assert result.returncode == 0, result.stderr
        out[overlay] = [doc for doc in yaml.safe_load_all(result.stdout) if doc]
    return out
