"""tensorflow: `TF_CONFIG` for distributed TensorFlow.

Each container gets `TF_CONFIG`, the JSON TensorFlow reads to find its cluster: the hosts
(`<domain>:<port>`) of the tasks playing ps, worker, chief and evaluator (task names from
`--ps`, `--worker`, `--chief`, `--evaluator`, defaulting to those words; `--port`
defaulting to 2222) and this pod's role and index. A job of one task with one replica is
stand-alone and gets no `TF_CONFIG`. Relies on svc for the host names (Volcano's
admission adds svc to a job with this plugin).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from lavalog.controller.actuator.core.job import JobView
from lavalog.controller.actuator.core.names import domain_name
from lavalog.controller.actuator.core.plugins.base import ObjectRef, PluginContext
from lavalog.controller.actuator.core.podspec import Manifest, append_env, env
from lavalog.controller.plugins import Arguments
from lavalog.controller.plugins.catalogue import TENSORFLOW_ROLES
from lavalog.events.decisions import PodRef

#: the order a task name is matched against roles (Volcano's `getTaskType`)
_TYPE_ORDER = ("chief", "worker", "ps", "evaluator")


@dataclass(frozen=True, slots=True)
class TensorflowPlugin:
    #: role -> task name
    tasks: Mapping[str, str]
    port: int
    name: ClassVar[str] = "tensorflow"

    def on_pod_create(self, pod: Manifest, job: JobView, ref: PodRef) -> None:
        tasks = job.spec.tasks
        if len(tasks) == 1 and tasks[0].replicas == 1:
            return
        task = {"type": self._role(ref.task), "index": ref.index}
        config = json.dumps({"cluster": self._cluster(job), "task": task}, separators=(",", ":"))
        append_env(pod, [env("TF_CONFIG", config)], init=False)

    def job_resources(self, job: JobView, task_replicas: Mapping[str, int]) -> list[Manifest]:
        return []

    def job_resource_refs(self, job: str) -> list[ObjectRef]:
        return []

    def _cluster(self, job: JobView) -> dict[str, list[str]]:
        cluster: dict[str, list[str]] = {}
        for role in TENSORFLOW_ROLES:
            task = next((t for t in job.spec.tasks if t.name == self.tasks[role]), None)
            if task is not None and task.replicas > 0:
                hosts = (domain_name(job.name, task, i) for i in range(task.replicas))
                cluster[role] = [f"{host}:{self.port}" for host in hosts]
        return cluster

    def _role(self, task: str) -> str:
        return next((role for role in _TYPE_ORDER if self.tasks[role] == task), task)


def build(args: Arguments, context: PluginContext) -> TensorflowPlugin:
    return TensorflowPlugin(
        tasks={role: args.text(role) for role in TENSORFLOW_ROLES}, port=args.number("port")
    )
