"""The Kustomize base and overlays render, every object is valid by its schema, and every
container runs locked down with probes on the health endpoints the code serves."""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest

from lavalog.apimachinery import kube_schema, schema
from lavalog.controller.broker import broker_binary
from tests.deploy.conftest import DEPLOY, OVERLAYS, is_operators


def objects(
    rendered: dict[str, list[dict[str, Any]]], overlay: str, kind: str
) -> list[dict[str, Any]]:
    return [doc for doc in rendered[overlay] if doc["kind"] == kind]


def by_name(docs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {doc["metadata"]["name"]: doc for doc in docs}


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_core_objects_are_valid_by_the_kubernetes_schema(rendered, overlay):
    """Unknown fields and wrong types, as the API server's pruning would find them."""
    checked = 0
    for doc in rendered[overlay]:
        group_version = doc["apiVersion"]
        if not group_version.endswith("/v1") and group_version != "v1":
            continue
        if group_version.split("/")[0] == "apiextensions.k8s.io" or is_operators(doc):
            continue  # CRDs: tests/simulator/test_strict.py; operators' kinds: test_install.py
        findings = schema.apply(kube_schema.of("V1" + doc["kind"]), doc, defaults=False)
        assert (findings.unknown, findings.invalid) == ([], []), doc["metadata"]["name"]
        checked += 1
    assert checked >= 8


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_container_is_locked_down(rendered, overlay):
    for deployment in objects(rendered, overlay, "Deployment"):
        pod = deployment["spec"]["template"]["spec"]
        assert pod["securityContext"]["runAsNonRoot"] is True
        assert pod["securityContext"]["runAsUser"] != 0
        for container in pod["containers"]:
            context = container["securityContext"]
            assert context["readOnlyRootFilesystem"] is True
            assert context["allowPrivilegeEscalation"] is False
            assert context["capabilities"]["drop"] == ["ALL"]
            assert {"cpu", "memory"} <= container["resources"]["requests"].keys()
            assert {"cpu", "memory"} <= container["resources"]["limits"].keys()
            assert "livenessProbe" in container and "readinessProbe" in container


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_lavalog_probes_use_the_health_endpoints(rendered, overlay):
    for name in ("lavalog-controller", "lavalog-projections"):
        container = by_name(objects(rendered, overlay, "Deployment"))[name]["spec"]["template"][
            "spec"
        ]["containers"][0]
        assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
        assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
        env = {e["name"]: e for e in container["env"]}
        if name == "lavalog-controller":
            # the kubelet and Prometheus reach the pod's address, not its loopback
            assert env["LAVALOG_HTTP_HOST"]["value"] == "0.0.0.0"


def test_dev_runs_one_controller_against_the_in_namespace_broker(rendered):
    deployments = by_name(objects(rendered, "overlays/dev", "Deployment"))
    assert deployments["lavalog-controller"]["spec"]["replicas"] == 1
    assert "lavalog-kafka" in deployments
    assert objects(rendered, "overlays/dev", "KafkaTopic") == []
    for name in ("lavalog-controller", "lavalog-projections"):
        env = {
            e["name"]: e
            for e in deployments[name]["spec"]["template"]["spec"]["containers"][0]["env"]
        }
        assert env["LAVALOG_BOOTSTRAP_SERVERS"]["value"] == "lavalog-kafka:9092"


def test_production_uses_tls_sasl_from_a_secret_and_postgresql(rendered):
    deployments = by_name(objects(rendered, "overlays/production", "Deployment"))
    assert deployments["lavalog-controller"]["spec"]["replicas"] == 2
    assert deployments["lavalog-projections"]["spec"]["replicas"] == 2
    for name in ("lavalog-controller", "lavalog-projections"):
        pod = deployments[name]["spec"]["template"]["spec"]
        env = {e["name"]: e for e in pod["containers"][0]["env"]}
        assert env["LAVALOG_KAFKA_SECURITY_PROTOCOL"]["value"] == "SASL_SSL"
        for key in ("LAVALOG_KAFKA_SASL_USERNAME", "LAVALOG_KAFKA_SASL_PASSWORD"):
            assert env[key]["valueFrom"]["secretKeyRef"]["name"] == "lavalog-kafka"
        mounted = {m["mountPath"] for m in pod["containers"][0]["volumeMounts"]}
        assert env["LAVALOG_KAFKA_SSL_CAFILE"]["value"].rpartition("/")[0] in mounted
    projections = deployments["lavalog-projections"]["spec"]["template"]["spec"]
    assert (
        "secretKeyRef"
        in {e["name"]: e for e in projections["containers"][0]["env"]}["LAVALOG_STORE"]["valueFrom"]
    )
    # two replicas cannot share a ReadWriteOnce claim
    assert objects(rendered, "overlays/production", "PersistentVolumeClaim") == []


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_monitoring_objects_select_both_components(rendered, overlay):
    (monitor,) = objects(rendered, overlay, "ServiceMonitor")
    selector = monitor["spec"]["selector"]["matchLabels"]
    services = [
        s
        for s in objects(rendered, overlay, "Service")
        if selector.items() <= s["metadata"].get("labels", {}).items()
    ]
    assert {s["metadata"]["name"] for s in services} >= {
        "lavalog-controller-metrics",
        "lavalog-projections",
    }
    assert all(p["name"] == "http" for s in services for p in s["spec"]["ports"])
    (budget,) = objects(rendered, overlay, "PodDisruptionBudget")
    assert budget["spec"]["maxUnavailable"] == 1


def test_the_dev_broker_image_is_the_tansu_the_tests_run(rendered):
    """The overlay's image tag is the version of the development broker binary that every
    integration test here runs against, so the dev install behaves as tested."""
    answer = subprocess.run(
        [broker_binary(), "--version"], capture_output=True, text=True, check=True
    )
    version = answer.stdout.split()[-1]  # "tansu 0.6.0"
    broker = by_name(objects(rendered, "overlays/dev", "Deployment"))["lavalog-kafka"]
    (container,) = broker["spec"]["template"]["spec"]["containers"]
    assert container["image"] == f"ghcr.io/tansu-io/tansu:{version}"


@pytest.mark.parametrize("deployment", ["lavalog-controller", "lavalog-projections"])
@pytest.mark.parametrize("overlay", OVERLAYS)
def test_each_component_authenticates_with_kubernetes_and_may_review(rendered, overlay, deployment):
    """Listening on every interface, the controller's /metrics and the projections' API ask
    each caller for a Kubernetes token; the component's service account may create the
    reviews (system:auth-delegator); Prometheus scrapes both with a token whose account may
    get /metrics."""
    docs = rendered[overlay]
    pod = by_name(objects(rendered, overlay, "Deployment"))[deployment]["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert "--kubernetes-auth" in container["args"]
    account = pod["serviceAccountName"]
    bound = {
        (binding["roleRef"]["name"], subject["name"])
        for binding in docs
        if binding["kind"] == "ClusterRoleBinding"
        for subject in binding["subjects"]
    }
    assert ("system:auth-delegator", account) in bound
    (monitor,) = objects(rendered, overlay, "ServiceMonitor")
    (endpoint,) = monitor["spec"]["endpoints"]
    secret = by_name(objects(rendered, overlay, "Secret"))[
        endpoint["authorization"]["credentials"]["name"]
    ]
    assert secret["type"] == "kubernetes.io/service-account-token"
    scraper = secret["metadata"]["annotations"]["kubernetes.io/service-account.name"]
    roles = by_name(objects(rendered, overlay, "ClusterRole"))
    granted = {
        url
        for role, subject in bound
        if subject == scraper
        for rule in roles[role]["rules"]
        for url in rule.get("nonResourceURLs", [])
    }
    assert "/metrics" in granted


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_the_dashboard_is_installed_for_grafanas_sidecar(rendered, overlay):
    """`apply -k` installs the Grafana dashboard (README, docs/metrics.md) as the
    ConfigMap Grafana's dashboard sidecar loads."""
    (config_map,) = [
        doc
        for doc in objects(rendered, overlay, "ConfigMap")
        if doc["metadata"].get("labels", {}).get("grafana_dashboard") == "1"
    ]
    shipped = json.loads((DEPLOY / "base" / "grafana-dashboard.json").read_text())
    assert json.loads(config_map["data"]["grafana-dashboard.json"]) == shipped


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_the_projections_command_with_the_callers_token_never_their_own(rendered, overlay):
    """The job page's suspend, resume and restart create each Command with the caller's own
    token: the projections' service account is bound to the token and access reviews
    (system:auth-delegator) and nothing else, and a user's right to create Commands comes
    from lavalog-job-commander (create commands.bus.volcano.sh, nothing more), which
    docs/install.md binds per namespace and no lavalog account holds."""
    bindings = [d for d in rendered[overlay] if d["kind"] in ("ClusterRoleBinding", "RoleBinding")]
    held = {
        binding["roleRef"]["name"]
        for binding in bindings
        for subject in binding["subjects"]
        if subject
        == {"kind": "ServiceAccount", "name": "lavalog-projections", "namespace": "lavalog-system"}
    }
    assert held == {"system:auth-delegator"}
    commander = by_name(objects(rendered, overlay, "ClusterRole"))["lavalog-job-commander"]
    assert commander["rules"] == [
        {"apiGroups": ["bus.volcano.sh"], "resources": ["commands"], "verbs": ["create"]}
    ]
    assert [b for b in bindings if b["roleRef"]["name"] == "lavalog-job-commander"] == []
