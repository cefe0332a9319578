"""env: tell every container its replica index (`VK_TASK_INDEX`, then `VC_TASK_INDEX`).

Volcano sets these only through this plugin, never by default, on containers and init
containers alike; `VK_` is the name from Volcano's Kubernetes-batch days, kept for old
images.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from lavalog.controller.actuator.core.job import JobView
from lavalog.controller.actuator.core.plugins.base import ObjectRef, PluginContext
from lavalog.controller.actuator.core.podspec import Manifest, append_env, env
from lavalog.controller.plugins import Arguments
from lavalog.events.decisions import PodRef


@dataclass(frozen=True, slots=True)
class EnvPlugin:
    name: ClassVar[str] = "env"

    def on_pod_create(self, pod: Manifest, job: JobView, ref: PodRef) -> None:
        index = str(ref.index)
        append_env(pod, [env("VK_TASK_INDEX", index), env("VC_TASK_INDEX", index)], init=True)

    def job_resources(self, job: JobView, task_replicas: Mapping[str, int]) -> list[Manifest]:
        return []

    def job_resource_refs(self, job: str) -> list[ObjectRef]:
        return []


def build(args: Arguments, context: PluginContext) -> EnvPlugin:
    return EnvPlugin()
