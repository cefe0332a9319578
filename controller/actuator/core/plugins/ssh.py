"""ssh: password-less ssh between the job's pods (what MPI launchers use).

Object: a Secret `<job>-ssh` with a key pair (`id_rsa`, `id_rsa.pub`, `authorized_keys`)
and an ssh `config` that skips host key checks and maps each pod's short hostname to its
DNS name and `--ssh-port` (default 22). Each pod mounts it at `--ssh-key-file-path`
(default /root/.ssh) with mode 0600, or 0644 at any other path: a non-root user cannot
read a root-owned 0600 file. The key pair is the user's
(`--ssh-private-key`/`--ssh-public-key`) or comes from the `PluginContext`'s key
generator, so this module stays deterministic; the Secret is created once per run of the
job and then kept, since running pods hold the keys (see `KEEP_EXISTING_KINDS`); killing
the whole job deletes it, so a restarted job gets fresh keys.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from lavalog.controller.actuator.core.job import JobView
from lavalog.controller.actuator.core.names import domain_name, host_name, task_indices
from lavalog.controller.actuator.core.plugins.base import (
    KeyGenerator,
    KeyPair,
    ObjectRef,
    PluginContext,
    PluginError,
)
from lavalog.controller.actuator.core.podspec import Manifest, add_volume
from lavalog.controller.plugins import Arguments
from lavalog.controller.plugins.catalogue import SSH_ROOT_KEY_PATH
from lavalog.events.decisions import PodRef

_SUBPATH = ".ssh"
_FILES = ("id_rsa", "id_rsa.pub", "authorized_keys", "config")
ROOT_MODE = 0o600
OTHER_MODE = 0o644


def secret_name(job: str) -> str:
    return f"{job}-ssh"


def ssh_config(job: JobView, task_replicas: Mapping[str, int], port: int) -> str:
    lines = ["StrictHostKeyChecking no", "UserKnownHostsFile /dev/null"]
    for task in job.spec.tasks:
        for i in task_indices(task, task_replicas.get(task.name, task.replicas)):
            lines.append(f"Host {host_name(job.name, task, i)}")
            lines.append(f"  HostName {domain_name(job.name, task, i)}")
            lines.append(f"  Port {port}")
    return "\n".join(lines) + "\n"


@dataclass(frozen=True, slots=True)
class SshPlugin:
    key_path: str
    port: int
    user_keys: KeyPair | None
    keygen: KeyGenerator | None
    name: ClassVar[str] = "ssh"

    def on_pod_create(self, pod: Manifest, job: JobView, ref: PodRef) -> None:
        secret = secret_name(job.name)
        volume = {
            "name": secret,
            "secret": {
                "secretName": secret,
                "items": [{"key": key, "path": f"{_SUBPATH}/{key}"} for key in _FILES],
                "defaultMode": ROOT_MODE if self.key_path == SSH_ROOT_KEY_PATH else OTHER_MODE,
            },
        }
        mount = {"name": secret, "mountPath": self.key_path, "subPath": _SUBPATH}
        add_volume(pod, volume, mount, init=True)

    def job_resources(self, job: JobView, task_replicas: Mapping[str, int]) -> list[Manifest]:
        keys = self.user_keys or self._generate()
        texts = (
            keys.private_key,
            keys.public_key,
            keys.public_key,
            ssh_config(job, task_replicas, self.port),
        )
        data = {
            key: base64.b64encode(text.encode()).decode()
            for key, text in zip(_FILES, texts, strict=True)
        }
        metadata = job.owned_metadata(secret_name(job.name))
        return [{"apiVersion": "v1", "kind": "Secret", "metadata": metadata, "data": data}]

    def job_resource_refs(self, job: str) -> list[ObjectRef]:
        return [ObjectRef("v1", "Secret", secret_name(job))]

    def _generate(self) -> KeyPair:
        if self.keygen is None:
            raise PluginError("the ssh plugin needs a key generator to create the job's key pair")
        return self.keygen()


def build(args: Arguments, context: PluginContext) -> SshPlugin:
    private, public = args.text("ssh-private-key"), args.text("ssh-public-key")
    user_keys = KeyPair(private, public) if private else None
    return SshPlugin(
        key_path=args.text("ssh-key-file-path"),
        port=args.number("ssh-port"),
        user_keys=user_keys,
        keygen=context.keygen,
    )
