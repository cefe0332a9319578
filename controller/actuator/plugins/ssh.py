"""ssh: password-less ssh between the job's pods (what MPI launchers use).

Object: a Secret `<job>-ssh` with a key pair (`id_rsa`, `id_rsa.pub`, `authorized_keys`)
and an ssh `config` that skips host key checks and maps each pod's short hostname to its
DNS name. Each pod mounts it at `--ssh-key-file-path` (default /root/.ssh) with mode 0600.
The key pair is the user's (`--ssh-private-key`/`--ssh-public-key`) or comes from the
`PluginContext`'s key generator, so this module stays deterministic; the Secret must be
created once and then kept, since running pods hold the keys (see `KEEP_EXISTING_KINDS`).
`--no-root` (from older Volcano releases, dropped since) moves the default path to
/etc/volcano/.ssh, as it did there.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from controller.actuator.job import JobView
from controller.actuator.names import domain_name, host_name, task_indices
from controller.actuator.plugins.args import Arguments, FlagSet
from controller.actuator.plugins.base import KeyGenerator, KeyPair, PluginContext, PluginError
from controller.actuator.podspec import Manifest, add_volume
from events.decisions import PodRef

ROOT_PATH = "/root/.ssh"
NO_ROOT_PATH = "/etc/volcano/.ssh"
FLAGS = FlagSet(
    "ssh",
    {"ssh-key-file-path": ROOT_PATH, "ssh-private-key": "", "ssh-public-key": "", "no-root": False},
)
_SUBPATH = ".ssh"
_FILES = ("id_rsa", "id_rsa.pub", "authorized_keys", "config")
_MODE = 0o600


def secret_name(job: str) -> str:
    return f"{job}-ssh"


def ssh_config(job: JobView, task_replicas: Mapping[str, int]) -> str:
    lines = ["StrictHostKeyChecking no", "UserKnownHostsFile /dev/null"]
    for task in job.spec.tasks:
        for i in task_indices(task, task_replicas.get(task.name, task.replicas)):
            lines.append(f"Host {host_name(job.name, task, i)}")
            lines.append(f"  HostName {domain_name(job.name, task, i)}")
    return "\n".join(lines) + "\n"


@dataclass(frozen=True, slots=True)
class SshPlugin:
    key_path: str = ROOT_PATH
    user_keys: KeyPair | None = None
    keygen: KeyGenerator | None = None
    name: ClassVar[str] = "ssh"

    def on_pod_create(self, pod: Manifest, job: JobView, ref: PodRef) -> None:
        secret = secret_name(job.name)
        volume = {
            "name": secret,
            "secret": {
                "secretName": secret,
                "items": [{"key": key, "path": f"{_SUBPATH}/{key}"} for key in _FILES],
                "defaultMode": _MODE,
            },
        }
        mount = {"name": secret, "mountPath": self.key_path, "subPath": _SUBPATH}
        add_volume(pod, volume, mount, init=True)

    def job_resources(self, job: JobView, task_replicas: Mapping[str, int]) -> list[Manifest]:
        keys = self.user_keys or self._generate()
        texts = (keys.private_key, keys.public_key, keys.public_key, ssh_config(job, task_replicas))
        data = {
            key: base64.b64encode(text.encode()).decode()
            for key, text in zip(_FILES, texts, strict=True)
        }
        metadata = job.owned_metadata(secret_name(job.name))
        return [{"apiVersion": "v1", "kind": "Secret", "metadata": metadata, "data": data}]

    def _generate(self) -> KeyPair:
        if self.keygen is None:
            raise PluginError("the ssh plugin needs a key generator to create the job's key pair")
        return self.keygen()


def build(args: Arguments, context: PluginContext) -> SshPlugin:
    path = args.text("ssh-key-file-path")
    if args.flag("no-root") and path == ROOT_PATH:
        path = NO_ROOT_PATH
    private, public = args.text("ssh-private-key"), args.text("ssh-public-key")
    user_keys = KeyPair(private, public) if private else None
    return SshPlugin(key_path=path, user_keys=user_keys, keygen=context.keygen)
