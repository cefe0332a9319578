"""The NetworkPolicies let each of lavalog's pods be reached by what needs it and nothing
else: the development broker by the controller and the projections only, the API from
anywhere (it authenticates every caller) on its port only, the controller's health and
metrics on theirs.

Reachability is worked out as Kubernetes defines it (networking/v1 NetworkPolicy): a pod
no policy selects for Ingress takes any traffic; a selected pod takes what one of the
selecting policies' rules allows, a rule matching a peer (podSelector in the policy's
namespace, namespaceSelector, or both) and a port (none listed: every port)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.deploy.conftest import OVERLAYS

Obj = dict[str, Any]
Labels = dict[str, str]

SYSTEM = "lavalog-system"
ELSEWHERE = {"kubernetes.io/metadata.name": "team-a"}
HOME = {"kubernetes.io/metadata.name": SYSTEM}


def selects(selector: Obj | None, labels: Labels) -> bool:
    """A LabelSelector (matchLabels, matchExpressions) against labels; {} selects all."""
    selector = selector or {}
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    for expression in selector.get("matchExpressions") or []:
        key, operator, values = expression["key"], expression["operator"], expression.get("values")
        present = key in labels
        if operator == "In" and not (present and labels[key] in values):
            return False
        if operator == "NotIn" and present and labels[key] in values:
            return False
        if operator == "Exists" and not present:
            return False
        if operator == "DoesNotExist" and present:
            return False
    return True


def _peer_matches(peer: Obj, policy_namespace: str, source: Labels, namespace: Labels) -> bool:
    if "namespaceSelector" in peer:
        if not selects(peer["namespaceSelector"], namespace):
            return False
    elif namespace.get("kubernetes.io/metadata.name") != policy_namespace:
        return False  # a podSelector alone: pods of the policy's own namespace
    return "podSelector" not in peer or selects(peer["podSelector"], source)


def reachable(
    policies: list[Obj], pod: Labels, port: int, *, source: Labels, namespace: Labels
) -> bool:
    """Whether a pod labelled `source` in a namespace labelled `namespace` may open `port`
    on a pod labelled `pod` in lavalog-system."""
    selecting = [
        p
        for p in policies
        if "Ingress" in p["spec"].get("policyTypes", ["Ingress"])
        and selects(p["spec"]["podSelector"], pod)
    ]
    if not selecting:
        return True
    for policy in selecting:
        for rule in policy["spec"].get("ingress") or []:
            peers = rule.get("from") or []
            ports = rule.get("ports") or []
            if peers and not any(
                _peer_matches(peer, policy["metadata"]["namespace"], source, namespace)
                for peer in peers
            ):
                continue
            if ports and not any(p.get("port") == port for p in ports):
                continue
            return True
    return False


def _pods(docs: list[Obj]) -> dict[str, tuple[Labels, list[int]]]:
    """component -> (pod labels, container ports) of each Deployment."""
    found = {}
    for doc in docs:
        if doc["kind"] == "Deployment":
            template = doc["spec"]["template"]
            labels = template["metadata"]["labels"]
            ports = [
                p["containerPort"]
                for c in template["spec"]["containers"]
                for p in c.get("ports", [])
            ]
            found[labels["app.kubernetes.io/component"]] = (labels, ports)
    return found


def _policies(docs: list[Obj]) -> list[Obj]:
    return [doc for doc in docs if doc["kind"] == "NetworkPolicy"]


STRANGER = {"app": "something-else"}


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_each_component_is_reachable_on_its_port_and_no_other(
    rendered: dict[str, list[Obj]], overlay: str
) -> None:
    docs = rendered[overlay]
    policies, pods = _policies(docs), _pods(docs)
    for component in ("controller", "projections"):
        labels, (port,) = pods[component]
        for source, namespace in ((STRANGER, ELSEWHERE), (STRANGER, HOME)):
            assert reachable(policies, labels, port, source=source, namespace=namespace), component
            assert not reachable(policies, labels, 9092, source=source, namespace=namespace)
            other = 8000 if port == 8080 else 8080
            assert not reachable(policies, labels, other, source=source, namespace=namespace)


def test_the_dev_broker_answers_the_controller_and_the_projections_only(
    rendered: dict[str, list[Obj]],
) -> None:
    docs = rendered["overlays/dev"]
    policies, pods = _policies(docs), _pods(docs)
    broker, (kafka_port,) = pods["kafka"]
    for component in ("controller", "projections"):
        client = pods[component][0]
        assert reachable(policies, broker, kafka_port, source=client, namespace=HOME), component
        # the same labels in another namespace are another application
        assert not reachable(policies, broker, kafka_port, source=client, namespace=ELSEWHERE)
    assert not reachable(policies, broker, kafka_port, source=STRANGER, namespace=HOME)
    assert not reachable(policies, broker, kafka_port, source=pods["kafka"][0], namespace=HOME)
    assert not reachable(policies, broker, 8000, source=pods["controller"][0], namespace=HOME)


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_pod_is_selected_by_a_policy(rendered: dict[str, list[Obj]], overlay: str) -> None:
    """No pod is left open to every port by having no policy at all."""
    docs = rendered[overlay]
    policies = _policies(docs)
    for component, (labels, _) in _pods(docs).items():
        assert any(selects(p["spec"]["podSelector"], labels) for p in policies), component
