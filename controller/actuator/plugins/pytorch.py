"""pytorch: the environment `torch.distributed` reads to form its process group.

Each container gets `MASTER_ADDR` (the first master replica's DNS name), `MASTER_PORT`
(`--port`, default 23456, also opened on the container as `pytorchjob-port`),
`WORLD_SIZE` (all replicas of all tasks) and `RANK`: 0 on the master, index + 1 on a
worker, none on other tasks. Task names come from `--master`/`--worker` (default
"master"/"worker"); a job without the master task is left alone, as in Volcano.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from controller.actuator.job import JobView
from controller.actuator.names import domain_name
from controller.actuator.plugins.args import Arguments, FlagSet
from controller.actuator.plugins.base import PluginContext
from controller.actuator.podspec import Manifest, append_env, containers, env, open_port
from events.decisions import PodRef

FLAGS = FlagSet("pytorch", {"master": "master", "worker": "worker", "port": 23456})


@dataclass(frozen=True, slots=True)
class PytorchPlugin:
    master: str = "master"
    worker: str = "worker"
    port: int = 23456
    name: ClassVar[str] = "pytorch"

    def on_pod_create(self, pod: Manifest, job: JobView, ref: PodRef) -> None:
        master = job.spec.task(self.master)
        if master is None:
            return
        variables = [
            env("MASTER_ADDR", domain_name(job.name, master, 0)),
            env("MASTER_PORT", str(self.port)),
            env("WORLD_SIZE", str(job.spec.total_replicas)),
        ]
        if ref.task == self.worker:
            variables.append(env("RANK", str(ref.index + 1)))
        elif ref.task == self.master:
            variables.append(env("RANK", "0"))
        for container in containers(pod, init=False):
            open_port(container, "pytorchjob-port", self.port)
        append_env(pod, variables, init=False)

    def job_resources(self, job: JobView, task_replicas: Mapping[str, int]) -> list[Manifest]:
        return []


def build(args: Arguments, context: PluginContext) -> PytorchPlugin:
    return PytorchPlugin(
        master=args.text("master"), worker=args.text("worker"), port=args.number("port")
    )
