"""API paths of the objects the actuator writes, from their apiVersion and kind.

Manifests from the pure half name their kind but not their URL; this is the one place
that maps a kind to its plural resource, so a new plugin object kind is one table entry.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lavalog.events.volcano.api import API_VERSION as JOB_API_VERSION
from lavalog.events.volcano.api import PODGROUP_API_VERSION, PODGROUP_KIND

_PLURALS: dict[tuple[str, str], str] = {
    ("v1", "Pod"): "pods",
    ("v1", "Service"): "services",
    ("v1", "ConfigMap"): "configmaps",
    ("v1", "Secret"): "secrets",
    ("v1", "Event"): "events",
    ("v1", "PersistentVolumeClaim"): "persistentvolumeclaims",
    ("networking.k8s.io/v1", "NetworkPolicy"): "networkpolicies",
    (PODGROUP_API_VERSION, PODGROUP_KIND): "podgroups",
    (JOB_API_VERSION, "Job"): "jobs",
}


def collection(api_version: str, kind: str, namespace: str) -> str:
    """`/api/v1/namespaces/NS/pods`, `/apis/GROUP/VERSION/namespaces/NS/PLURAL`."""
    plural = _PLURALS.get((api_version, kind))
    if plural is None:
        raise ValueError(f"the actuator does not write {kind} ({api_version})")
    root = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
    return f"{root}/namespaces/{namespace}/{plural}"


def named(api_version: str, kind: str, namespace: str, name: str) -> str:
    return f"{collection(api_version, kind, namespace)}/{name}"


def of_manifest(manifest: Mapping[str, Any]) -> tuple[str, str]:
    """(collection path, object path) of a manifest with apiVersion, kind and metadata."""
    metadata = manifest["metadata"]
    base = collection(manifest["apiVersion"], manifest["kind"], metadata["namespace"])
    return base, f"{base}/{metadata['name']}"


def job(namespace: str, name: str) -> str:
    return named(JOB_API_VERSION, "Job", namespace, name)


def jobs(namespace: str | None = None) -> str:
    """The Jobs of `namespace`, or of every namespace."""
    if namespace is not None:
        return collection(JOB_API_VERSION, "Job", namespace)
    return f"/apis/{JOB_API_VERSION}/jobs"


def priority_class(name: str) -> str:
    return f"/apis/scheduling.k8s.io/v1/priorityclasses/{name}"
