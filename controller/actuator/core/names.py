"""Names Volcano gives a job's pods and their DNS hosts; programs inside the pods rely on them.

A pod is `<job>-<task>-<index>`. With the svc plugin's headless Service (named after the
job) and each pod's hostname/subdomain, a pod is reachable as
`<job>-<task>-<index>.<job>`; a task template may set its own `hostname`/`subdomain`, in
which case all replicas share that one host (`MakeDomainName`, svc's `GenerateHosts`).
"""

from __future__ import annotations

import hashlib

from lavalog.events.volcano.api import TaskSpec

_BASE36 = "0123456789abcdefghijklmnopqrstuvwxyz"


def pod_name(job: str, task: str, index: int) -> str:
    return f"{job}-{task}-{index}"


def host_name(job: str, task: TaskSpec, index: int) -> str:
    """The pod's hostname: the template's, or the pod name."""
    return _template_field(task, "hostname") or pod_name(job, task.name, index)


def domain_name(job: str, task: TaskSpec, index: int) -> str:
    """`<hostname>.<subdomain>`: the subdomain is the template's, or the job name."""
    subdomain = _template_field(task, "subdomain") or job
    return f"{host_name(job, task, index)}.{subdomain}"


def task_indices(task: TaskSpec, replicas: int) -> range:
    """Indices with distinct hosts: every replica, or only the first when the template
    fixes the hostname (Volcano lists such a task's host once)."""
    return range(min(replicas, 1) if _template_field(task, "hostname") else replicas)


def task_hosts(job: str, task: TaskSpec, replicas: int) -> list[str]:
    """The task's distinct hosts, as in the hosts ConfigMap and `MPI_HOST`."""
    return [domain_name(job, task, i) for i in task_indices(task, replicas)]


def env_key(task: str) -> str:
    """A task name as it appears in environment variable names: `-` becomes `_`."""
    return task.replace("-", "_")


def random_like_suffix(seed: str) -> str:
    """12 characters from [0-9a-z], like Volcano's random ones (`GenRandomStr(12)`), but a
    function of `seed`, so that doing a write again names the same object."""
    number = int.from_bytes(hashlib.sha256(seed.encode()).digest()[:8])
    digits = []
    for _ in range(12):
        number, digit = divmod(number, 36)
        digits.append(_BASE36[digit])
    return "".join(digits)


def _template_field(task: TaskSpec, field: str) -> str:
    return str((task.template.get("spec") or {}).get(field) or "")
