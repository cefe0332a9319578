"""Volcano Job manifests for the end-to-end tests, in the shape of Volcano's e2e `JobSpec`.

Containers run what the simulated kubelet interprets (`sleep N`, `exit N`, `true`,
`false`, sequences); `FOREVER` stands for Volcano's nginx image, which never exits.
"""

from __future__ import annotations

from typing import Any

FOREVER = "sleep 3600"


def task(
    name: str,
    replicas: int = 1,
    command: str = FOREVER,
    *,
    restart: str = "Never",
    policies: list[dict[str, Any]] | None = None,
    min_available: int | None = None,
    cpu: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    container: dict[str, Any] = {"name": name, "image": "busybox", "command": ["sh", "-c", command]}
    if cpu is not None:
        container["resources"] = {"requests": {"cpu": cpu}}
    spec: dict[str, Any] = {
        "name": name,
        "replicas": replicas,
        "template": {"spec": {"restartPolicy": restart, "containers": [container]}},
        **extra,
    }
    if policies is not None:
        spec["policies"] = policies
    if min_available is not None:
        spec["minAvailable"] = min_available
    return spec


def job(
    name: str, *tasks: dict[str, Any], annotations: dict[str, str] | None = None, **spec: Any
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": "default"}
    if annotations:
        metadata["annotations"] = annotations
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": metadata,
        "spec": {"schedulerName": "volcano", "queue": "default", "tasks": list(tasks), **spec},
    }


def on(event: str, action: str, **more: Any) -> dict[str, Any]:
    """A lifecycle policy: `on("PodFailed", "RestartJob")`."""
    return {"event": event, "action": action, **more}
