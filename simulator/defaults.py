"""What the API server fills in on create, per kind, as defaulting and PrepareForCreate do.

Clients read these fields back (a new pod is `Pending` with `restartPolicy: Always`;
a new PodGroup is `Pending`), so the simulator must set them like the real server.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

from lavalog.apimachinery.resources import defaulted_requests
from lavalog.simulator import registry
from lavalog.simulator.probes import DEFAULTS as PROBE_DEFAULTS
from lavalog.simulator.probes import ProbeKind

Obj = dict[str, Any]

_cluster_ips = itertools.count(1)


def _pod(obj: Obj) -> None:
    spec = obj.setdefault("spec", {})
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    for container in spec.get("initContainers", []) + spec.get("containers", []):
        container.setdefault("imagePullPolicy", "IfNotPresent")
        container.setdefault("terminationMessagePath", "/dev/termination-log")
        container.setdefault("terminationMessagePolicy", "File")
        resources = container.setdefault("resources", {})
        if resources.get("limits"):
            resources["requests"] = defaulted_requests(resources)
        for kind in ProbeKind:
            probe = container.get(kind.field)
            if isinstance(probe, dict):
                for field, value in PROBE_DEFAULTS.items():
                    probe.setdefault(field, value)
    _tolerate_node_trouble(spec)
    obj["status"] = {"phase": "Pending", "qosClass": _qos_class(spec)}


#: what the DefaultTolerationSeconds admission plugin lets every pod tolerate, and how long
_NODE_TROUBLE = ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")
DEFAULT_TOLERATION_SECONDS = 300


def _tolerate_node_trouble(spec: Obj) -> None:
    """DefaultTolerationSeconds: a pod that does not tolerate a not-ready or unreachable
    node's NoExecute taint tolerates it for 300 s (so the taint eviction controller
    deletes it five minutes after its node was lost, not at once)."""
    tolerations = spec.get("tolerations") or []
    for key in _NODE_TROUBLE:
        if not any(
            t.get("key") in (key, None, "") and t.get("effect") in ("NoExecute", None, "")
            for t in tolerations
        ):
            tolerations.append(
                {
                    "key": key,
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": DEFAULT_TOLERATION_SECONDS,
                }
            )
    spec["tolerations"] = tolerations


def _qos_class(spec: Obj) -> str:
    resources = [c.get("resources") or {} for c in spec.get("containers", [])]
    if not any(r.get("requests") or r.get("limits") for r in resources):
        return "BestEffort"
    guaranteed = all(
        r.get("limits") and (r.get("requests") or r["limits"]) == r["limits"] for r in resources
    )
    return "Guaranteed" if guaranteed else "Burstable"


def _service(obj: Obj) -> None:
    spec = obj.setdefault("spec", {})
    spec.setdefault("type", "ClusterIP")
    if "clusterIP" not in spec:
        n = next(_cluster_ips)
        spec["clusterIP"] = f"10.96.{n // 250 % 250}.{n % 250 + 1}"
    spec.setdefault("clusterIPs", [spec["clusterIP"]])
    spec.setdefault("sessionAffinity", "None")
    obj["status"] = {"loadBalancer": {}}


def _namespace(obj: Obj) -> None:
    obj.setdefault("spec", {}).setdefault("finalizers", ["kubernetes"])
    obj["status"] = {"phase": "Active"}


def _secret(obj: Obj) -> None:
    obj.setdefault("type", "Opaque")


def _claim(obj: Obj) -> None:
    obj.setdefault("spec", {}).setdefault("volumeMode", "Filesystem")
    obj["status"] = {"phase": "Pending"}


def _status(**fields: Any) -> Callable[[Obj], None]:
    def apply(obj: Obj) -> None:
        obj["status"] = dict(fields)

    return apply


_DEFAULTS: dict[registry.ResourceType, Callable[[Obj], None]] = {
    registry.POD: _pod,
    registry.SERVICE: _service,
    registry.NAMESPACE: _namespace,
    registry.SECRET: _secret,
    registry.PVC: _claim,
    registry.PODGROUP: _status(phase="Pending"),
    registry.QUEUE: _status(state="Open"),
}


def apply(resource: registry.ResourceType, obj: Obj) -> None:
    """Fill in defaults for a new object (in place)."""
    if resource.has_status:
        obj.pop("status", None)  # status is not settable on create
    fill = _DEFAULTS.get(resource)
    if fill is not None:
        fill(obj)
