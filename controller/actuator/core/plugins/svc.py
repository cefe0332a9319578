"""svc: make the job's pods find each other by name.

Objects: a headless Service named after the job selecting its pods (so that
`<pod>.<job>` resolves; no ports, as Volcano's), a ConfigMap `<job>-svc` listing each
task's hosts, and unless `--disable-network-policy` a NetworkPolicy that admits traffic
to the job's pods only from the job's pods. Each pod gets hostname/subdomain, the
ConfigMap mounted at /etc/volcano (`<task>.host` files, one host per line) and
`VC_<TASK>_HOSTS` (comma-separated) and `VC_<TASK>_NUM` for every task, read from the
ConfigMap, unless `--inject-hosts-env=false` (a job of many tasks could outgrow the
environment's size limit; the hosts files stay). `--publish-not-ready-addresses` lets
pods resolve each other before they are ready. Killing the whole job deletes the three
objects; the next run creates them again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from lavalog.controller.actuator.core.job import JobView
from lavalog.controller.actuator.core.names import env_key, task_hosts
from lavalog.controller.actuator.core.plugins.base import ObjectRef, PluginContext
from lavalog.controller.actuator.core.podspec import Manifest, add_volume, append_env
from lavalog.controller.plugins import Arguments
from lavalog.events.decisions import PodRef
from lavalog.events.volcano import labels
from lavalog.events.volcano.api import TaskSpec

MOUNT_PATH = "/etc/volcano"


def configmap_name(job: str) -> str:
    return f"{job}-svc"


def hosts_data(job: JobView, task_replicas: Mapping[str, int]) -> dict[str, str]:
    """The hosts ConfigMap's data (`GenerateHosts`)."""
    data: dict[str, str] = {}
    for task in job.spec.tasks:
        hosts = task_hosts(job.name, task, task_replicas.get(task.name, task.replicas))
        key = env_key(task.name)
        data[f"{key}.host"] = "\n".join(hosts)
        data[_hosts_variable(task)] = ",".join(hosts)
        data[_count_variable(task)] = str(len(hosts))
    return data


@dataclass(frozen=True, slots=True)
class SvcPlugin:
    publish_not_ready_addresses: bool
    disable_network_policy: bool
    inject_hosts_env: bool
    name: ClassVar[str] = "svc"

    def on_pod_create(self, pod: Manifest, job: JobView, ref: PodRef) -> None:
        spec = pod["spec"]
        spec["hostname"] = spec.get("hostname") or pod["metadata"]["name"]
        spec["subdomain"] = spec.get("subdomain") or job.name
        cm = configmap_name(job.name)
        if self.inject_hosts_env:
            variables = [
                {"name": variable, "valueFrom": {"configMapKeyRef": {"name": cm, "key": variable}}}
                for task in job.spec.tasks
                for variable in (_hosts_variable(task), _count_variable(task))
            ]
            append_env(pod, variables, init=True)
        volume = {"name": cm, "configMap": {"name": cm}}
        add_volume(pod, volume, {"name": cm, "mountPath": MOUNT_PATH}, init=True)

    def job_resources(self, job: JobView, task_replicas: Mapping[str, int]) -> list[Manifest]:
        resources = [self._configmap(job, task_replicas), self._service(job)]
        if not self.disable_network_policy:
            resources.append(_network_policy(job))
        return resources

    def job_resource_refs(self, job: str) -> list[ObjectRef]:
        refs = [ObjectRef("v1", "ConfigMap", configmap_name(job)), ObjectRef("v1", "Service", job)]
        if not self.disable_network_policy:
            refs.append(ObjectRef("networking.k8s.io/v1", "NetworkPolicy", job))
        return refs

    def _configmap(self, job: JobView, task_replicas: Mapping[str, int]) -> Manifest:
        return {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": job.owned_metadata(configmap_name(job.name)),
            "data": hosts_data(job, task_replicas),
        }

    def _service(self, job: JobView) -> Manifest:
        spec: Manifest = {"clusterIP": "None", "selector": _job_selector(job)}
        if self.publish_not_ready_addresses:
            spec["publishNotReadyAddresses"] = True
        return {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": job.owned_metadata(job.name),
            "spec": spec,
        }


def _network_policy(job: JobView) -> Manifest:
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": job.owned_metadata(job.name),
        "spec": {
            "podSelector": {"matchLabels": _job_selector(job)},
            "ingress": [{"from": [{"podSelector": {"matchLabels": _job_selector(job)}}]}],
            "policyTypes": ["Ingress"],
        },
    }


def _job_selector(job: JobView) -> dict[str, str]:
    return {labels.JOB_NAME: job.name, labels.JOB_NAMESPACE: job.namespace}


def _hosts_variable(task: TaskSpec) -> str:
    return f"VC_{env_key(task.name).upper()}_HOSTS"


def _count_variable(task: TaskSpec) -> str:
    return f"VC_{env_key(task.name).upper()}_NUM"


def build(args: Arguments, context: PluginContext) -> SvcPlugin:
    return SvcPlugin(
        publish_not_ready_addresses=args.flag("publish-not-ready-addresses"),
        disable_network_policy=args.flag("disable-network-policy"),
        inject_hosts_env=args.flag("inject-hosts-env"),
    )
