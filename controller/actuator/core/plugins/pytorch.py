"""pytorch: the environment `torch.distributed` reads to form its process group.

Each container gets `MASTER_ADDR` (the first master replica's DNS name), `MASTER_PORT`
(`--port`, default 23456, also opened on the container as `pytorchjob-port`),
`WORLD_SIZE` (the replicas of the master and worker tasks: other tasks, a logger say,
are not ranks) and `RANK`: 0 on the master, index + 1 on a worker, none on other tasks.
Task names come from `--master`/`--worker` (default "master"/"worker"); a job without
the master task is left alone, as in Volcano.

`--wait-master-enabled` gives each worker pod an init container `wait-for-master`
(image `--wait-master-image`, default busybox:1.36.1) that polls the master's port every
2 s and fails after `--wait-master-timeout` seconds (default 300), so that workers do not
crash-loop while the master starts. Its shell script is Volcano's, line for line.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from lavalog.controller.actuator.core.job import JobView
from lavalog.controller.actuator.core.names import domain_name
from lavalog.controller.actuator.core.plugins.base import ObjectRef, PluginContext
from lavalog.controller.actuator.core.podspec import (
    Manifest,
    append_env,
    containers,
    env,
    open_port,
)
from lavalog.controller.plugins import Arguments
from lavalog.events.decisions import PodRef

WAIT_CONTAINER = "wait-for-master"


@dataclass(frozen=True, slots=True)
class PytorchPlugin:
    master: str
    worker: str
    port: int
    wait_master: bool
    wait_timeout: int
    wait_image: str
    name: ClassVar[str] = "pytorch"

    def on_pod_create(self, pod: Manifest, job: JobView, ref: PodRef) -> None:
        master = job.spec.task(self.master)
        if master is None:
            return
        address = domain_name(job.name, master, 0)
        world = sum(t.replicas for t in job.spec.tasks if t.name in (self.master, self.worker))
        variables = [
            env("MASTER_ADDR", address),
            env("MASTER_PORT", str(self.port)),
            env("WORLD_SIZE", str(world)),
        ]
        if ref.task == self.worker:
            variables.append(env("RANK", str(ref.index + 1)))
            if self.wait_master:
                self._add_wait_container(pod, address)
        elif ref.task == self.master:
            variables.append(env("RANK", "0"))
        for container in containers(pod, init=False):
            open_port(container, "pytorchjob-port", self.port)
        append_env(pod, variables, init=False)

    def job_resources(self, job: JobView, task_replicas: Mapping[str, int]) -> list[Manifest]:
        return []

    def job_resource_refs(self, job: str) -> list[ObjectRef]:
        return []

    def _add_wait_container(self, pod: Manifest, address: str) -> None:
        spec = pod["spec"]
        init = list(spec.get("initContainers") or ())
        if any(c.get("name") == WAIT_CONTAINER for c in init):
            return
        script = wait_script(address, self.port, self.wait_timeout)
        container = {
            "name": WAIT_CONTAINER,
            "image": self.wait_image,
            "command": ["sh", "-c", script],
        }
        spec["initContainers"] = [*init, container]


def wait_script(address: str, port: int, timeout: int) -> str:
    """The init container's script (Volcano's `generateWaitForMasterScript`)."""
    return (
        f'echo "Waiting for master node {address}:{port} to be ready..."\n'
        f"TIMEOUT={timeout}\n"
        "ELAPSED=0\n"
        f"until {{ nc -z {address} {port} || echo > /dev/tcp/{address}/{port}; }} 2>/dev/null; do\n"
        "  if [ $ELAPSED -ge $TIMEOUT ]; then\n"
        '    echo "Timeout waiting for master after ${TIMEOUT} seconds"\n'
        "    exit 1\n"
        "  fi\n"
        '  echo "Master not ready yet, retrying in 2 seconds... (elapsed: ${ELAPSED}s)"\n'
        "  sleep 2\n"
        "  ELAPSED=$((ELAPSED + 2))\n"
        "done\n"
        'echo "Master node is ready!"'
    )


def build(args: Arguments, context: PluginContext) -> PytorchPlugin:
    return PytorchPlugin(
        master=args.text("master"),
        worker=args.text("worker"),
        port=args.number("port"),
        wait_master=args.flag("wait-master-enabled"),
        wait_timeout=args.number("wait-master-timeout"),
        wait_image=args.text("wait-master-image"),
    )
