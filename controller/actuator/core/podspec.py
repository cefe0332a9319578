"""Small edits of a pod manifest (a JSON dict) shared by pod construction and the plugins.

Each appends the way Volcano's Go code does (`append(c.Env, ...)`), so that the order of
environment variables, volumes and mounts in a pod is the order Volcano produces.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

Manifest = dict[str, Any]


def containers(pod: Manifest, *, init: bool) -> list[Manifest]:
    """The pod's containers, followed by its init containers when `init`."""
    spec = pod["spec"]
    found: list[Manifest] = list(spec.get("containers") or ())
    if init:
        found += spec.get("initContainers") or ()
    return found


def env(name: str, value: str) -> Manifest:
    return {"name": name, "value": value}


def append_env(pod: Manifest, variables: Sequence[Manifest], *, init: bool) -> None:
    for container in containers(pod, init=init):
        container["env"] = [*(container.get("env") or ()), *variables]


def add_volume(pod: Manifest, volume: Manifest, mount: Manifest, *, init: bool) -> None:
    """Add `volume` to the pod and mount it (`mount` names it) in its containers."""
    spec = pod["spec"]
    spec["volumes"] = [*(spec.get("volumes") or ()), volume]
    for container in containers(pod, init=init):
        container["volumeMounts"] = [*(container.get("volumeMounts") or ()), dict(mount)]


def open_port(container: Manifest, name: str, port: int) -> None:
    """Declare `port` on the container unless it already declares that port number."""
    ports = container.get("ports") or []
    if all(p.get("containerPort") != port for p in ports):
        container["ports"] = [*ports, {"name": name, "containerPort": port}]
