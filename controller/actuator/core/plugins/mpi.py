"""mpi: what an MPI launcher needs to start ranks on the workers over ssh.

Every container and init container declares the ssh port (`--port`, default 22) as
`mpijob-port`; the master task's pods (`--master`, default "master") also get `MPI_HOST`,
the comma-separated DNS names of the worker task's pods (`--worker`, default "worker"),
ready for `mpirun --host $MPI_HOST`. The same hosts, one per line, are the hostfile
/etc/volcano/<worker>.host from svc. A worker task with no replicas gives an empty
`MPI_HOST`; a job without the worker task leaves its master pods untouched (no port, no
`MPI_HOST`), as in Volcano. Admission requires the master task and, as Volcano's does,
adds svc and ssh to a job with this plugin (the catalogue's `with_dependencies`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from lavalog.controller.actuator.core.job import JobView
from lavalog.controller.actuator.core.names import task_hosts
from lavalog.controller.actuator.core.plugins.base import ObjectRef, PluginContext
from lavalog.controller.actuator.core.podspec import Manifest, containers, env, open_port
from lavalog.controller.plugins import Arguments
from lavalog.events.decisions import PodRef


@dataclass(frozen=True, slots=True)
class MpiPlugin:
    master: str
    worker: str
    port: int
    name: ClassVar[str] = "mpi"

    def on_pod_create(self, pod: Manifest, job: JobView, ref: PodRef) -> None:
        variables: list[Manifest] = []
        if ref.task == self.master:
            worker = job.spec.task(self.worker)
            if worker is None:
                return
            hosts = ",".join(task_hosts(job.name, worker, worker.replicas))
            variables.append(env("MPI_HOST", hosts))
        for container in containers(pod, init=True):
            open_port(container, "mpijob-port", self.port)
            if variables:
                container["env"] = [*(container.get("env") or ()), *variables]

    def job_resources(self, job: JobView, task_replicas: Mapping[str, int]) -> list[Manifest]:
        return []

    def job_resource_refs(self, job: str) -> list[ObjectRef]:
        return []


def build(args: Arguments, context: PluginContext) -> MpiPlugin:
    return MpiPlugin(
        master=args.text("master"), worker=args.text("worker"), port=args.number("port")
    )
