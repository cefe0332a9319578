"""`lavalog run --identity`: the pod name in a pod, so that a restarted container is the
same Lease holder and group member; host-pid elsewhere, so that processes never share."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest
import yaml

from lavalog.controller.app import default_identity

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"


def test_in_a_pod_the_identity_is_the_pod_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POD_NAME", "lavalog-controller-7d9f-x2x4")
    assert default_identity() == "lavalog-controller-7d9f-x2x4"
    # without the downward API, the hostname Kubernetes gives the pod: its name
    monkeypatch.delenv("POD_NAME")
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1")
    assert default_identity() == socket.gethostname()


def test_outside_a_cluster_each_process_has_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("POD_NAME", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    assert default_identity() == f"{socket.gethostname()}-{os.getpid()}"


def test_the_deployment_names_each_replica_after_its_pod() -> None:
    [deployment] = [
        doc
        for doc in yaml.safe_load_all((DEPLOY / "base" / "controller.yaml").read_text())
        if doc and doc["kind"] == "Deployment"
    ]
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    env = {variable["name"]: variable for variable in container["env"]}
    assert env["LAVALOG_IDENTITY"]["valueFrom"] == {"fieldRef": {"fieldPath": "metadata.name"}}
