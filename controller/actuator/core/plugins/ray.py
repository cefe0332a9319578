"""ray: start a Ray cluster, the head task's pod as its head and the worker task's as nodes.

The head task's (`--head`, default "head") container `--headContainer` (default "head")
runs `ray start --head --block` on the GCS port (`--port`, 6379), the dashboard port
(`--dashboardPort`, 8265) and the client server port (`--clientPort`, 10001), declared
on the container as `gcs`, `dashboard` and `client-server`; the worker task's
(`--worker`) container `--workerContainer` (default "worker") runs `ray start --block
--address=<head host>:<port>`. Both commands replace the container's own. Object: a
Service `<job>-head-svc` selecting the head task's pods on those three ports, for
clients and the dashboard. Admission requires the head task (Volcano fails every pod
creation instead) and adds svc, which gives the head its host name.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from lavalog.controller.actuator.core.job import JobView
from lavalog.controller.actuator.core.names import domain_name
from lavalog.controller.actuator.core.plugins.base import ObjectRef, PluginContext, PluginError
from lavalog.controller.actuator.core.podspec import Manifest, containers, open_port
from lavalog.controller.plugins import Arguments
from lavalog.events.decisions import PodRef
from lavalog.events.volcano import labels


def service_name(job: str) -> str:
    return f"{job}-head-svc"


@dataclass(frozen=True, slots=True)
class RayPlugin:
    head: str
    head_container: str
    worker: str
    worker_container: str
    port: int
    dashboard_port: int
    client_port: int
    name: ClassVar[str] = "ray"

    def on_pod_create(self, pod: Manifest, job: JobView, ref: PodRef) -> None:
        head = job.spec.task(self.head)
        if head is None:
            raise PluginError(f"job {job.name} doesn't have head task {self.head}")
        for container in containers(pod, init=False):
            if ref.task == self.head and container.get("name") == self.head_container:
                for port_name, port in self._ports():
                    open_port(container, port_name, port)
                container["command"] = ["sh", "-c", self._head_command()]
            if ref.task == self.worker and container.get("name") == self.worker_container:
                address = f"{domain_name(job.name, head, 0)}:{self.port}"
                container["command"] = ["sh", "-c", f"ray start --block --address={address}"]

    def job_resources(self, job: JobView, task_replicas: Mapping[str, int]) -> list[Manifest]:
        selector = {
            labels.JOB_NAME: job.name,
            labels.JOB_NAMESPACE: job.namespace,
            labels.TASK_SPEC: self.head,
        }
        ports = [
            {"name": name, "port": port, "targetPort": name, "protocol": "TCP"}
            for name, port in self._ports()
        ]
        return [
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": job.owned_metadata(service_name(job.name)),
                "spec": {"selector": selector, "ports": ports},
            }
        ]

    def job_resource_refs(self, job: str) -> list[ObjectRef]:
        return [ObjectRef("v1", "Service", service_name(job))]

    def _ports(self) -> tuple[tuple[str, int], ...]:
        return (
            ("gcs", self.port),
            ("dashboard", self.dashboard_port),
            ("client-server", self.client_port),
        )

    def _head_command(self) -> str:
        return (
            "ray start --head --block --dashboard-host=0.0.0.0 "
            f"--port={self.port} --dashboard-port={self.dashboard_port} "
            f"--ray-client-server-port={self.client_port}"
        )


def build(args: Arguments, context: PluginContext) -> RayPlugin:
    return RayPlugin(
        head=args.text("head"),
        head_container=args.text("headContainer"),
        worker=args.text("worker"),
        worker_container=args.text("workerContainer"),
        port=args.number("port"),
        dashboard_port=args.number("dashboardPort"),
        client_port=args.number("clientPort"),
    )
