"""What a job plugin is: a pod mutation plus the objects the job needs beside its pods.

This is Volcano's `PluginInterface` without I/O: `OnPodCreate` becomes `on_pod_create`
(mutate the pod manifest in place), and `OnJobAdd`/`OnJobUpdate` become `job_resources`,
which returns the Services, ConfigMaps, NetworkPolicies and Secrets to create or update
instead of writing them; `OnJobDelete` becomes `job_resource_refs`, the names of those
objects, which killing the whole job deletes. All must be deterministic, so that
replaying a decision yields the same objects; anything random (an ssh key pair) comes
from the caller, through a `PluginContext`, as Volcano's plugins get their clientset.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import NamedTuple, Protocol

from lavalog.controller.actuator.core.job import JobView
from lavalog.controller.actuator.core.podspec import Manifest
from lavalog.events.decisions import PodRef


class KeyPair(NamedTuple):
    """An ssh key pair as the files hold it: PEM private key, `authorized_keys` line."""

    private_key: str
    public_key: str


KeyGenerator = Callable[[], KeyPair]


class ObjectRef(NamedTuple):
    """A namespaced object of the job, by apiVersion, kind and name."""

    api_version: str
    kind: str
    name: str


@dataclass(frozen=True, slots=True)
class PluginContext:
    """What plugins need from outside: `keygen` makes the ssh plugin's key pairs."""

    keygen: KeyGenerator | None = None


class PluginError(ValueError):
    """A job that a plugin cannot serve (a task it needs is missing, no key generator)."""


class Plugin(Protocol):
    @property
    def name(self) -> str: ...

    def on_pod_create(self, pod: Manifest, job: JobView, ref: PodRef) -> None:
        """Mutate the manifest of a pod about to be created."""

    def job_resources(self, job: JobView, task_replicas: Mapping[str, int]) -> list[Manifest]:
        """Objects to create or update for the job, its tasks having these replicas."""

    def job_resource_refs(self, job: str) -> list[ObjectRef]:
        """What `job_resources` writes for the job named `job`, by name (to delete it)."""
