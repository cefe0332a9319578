"""hcclrank: each pod's rank in Huawei's HCCL collective, as the pod annotation `hccl/rankIndex`.

The rank is the pod's `RANK` environment variable when a container has one (the pytorch
plugin's, which therefore runs first here), else the task index on the master task
(`--master`, default "master") and the master's replica count plus the task index on the
worker task (`--worker`, default "worker"); pods of other tasks and pods whose template
already sets the annotation are left alone. No objects.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from lavalog.controller.actuator.core.job import JobView
from lavalog.controller.actuator.core.plugins.base import ObjectRef, PluginContext
from lavalog.controller.actuator.core.podspec import Manifest
from lavalog.controller.plugins import Arguments
from lavalog.events.decisions import PodRef

RANK_ANNOTATION = "hccl/rankIndex"


@dataclass(frozen=True, slots=True)
class HcclRankPlugin:
    master: str
    worker: str
    name: ClassVar[str] = "hcclrank"

    def on_pod_create(self, pod: Manifest, job: JobView, ref: PodRef) -> None:
        annotations = pod["metadata"].setdefault("annotations", {})
        if annotations.get(RANK_ANNOTATION):
            return
        rank = _rank_variable(pod)
        if not rank and ref.task == self.master:
            rank = str(ref.index)
        elif not rank and ref.task == self.worker:
            master = job.spec.task(self.master)
            rank = str((master.replicas if master is not None else 0) + ref.index)
        if rank:
            annotations[RANK_ANNOTATION] = rank

    def job_resources(self, job: JobView, task_replicas: Mapping[str, int]) -> list[Manifest]:
        return []

    def job_resource_refs(self, job: str) -> list[ObjectRef]:
        return []


def _rank_variable(pod: Manifest) -> str:
    """The first plain `RANK` value among the containers' environment (Volcano's `getEnv`)."""
    for container in pod["spec"].get("containers") or ():
        for variable in container.get("env") or ():
            if variable.get("name") == "RANK":
                return str(variable.get("value") or "")
    return ""


def build(args: Arguments, context: PluginContext) -> HcclRankPlugin:
    return HcclRankPlugin(master=args.text("master"), worker=args.text("worker"))
