"""The job plugins a Job may list under `spec.plugins`: their names, flags, dependencies.

Volcano's admission webhook adds the plugins others depend on (svc for tensorflow,
pytorch, mpi and ray; ssh for mpi) before the job is stored, and rejects a job whose
plugin arguments its controller could not read; `with_dependencies` and `problems` are
those two steps. What each plugin does to pods lives with the actuator
(`controller/actuator/core/plugins/`), which builds one per entry of `CATALOGUE`, in its
order: Volcano walks a Go map, so its order varies from pod to pod; ours is the same
every time, and hcclrank comes after pytorch so that it reads pytorch's `RANK`.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass

from lavalog.controller.plugins.args import Arguments, FlagSet

#: the tensorflow plugin's roles, in the order they appear in TF_CONFIG's "cluster"; each
#: is also the flag naming the task that plays it
TENSORFLOW_ROLES = ("ps", "worker", "chief", "evaluator")
#: where the ssh plugin mounts the job's keys unless `--ssh-key-file-path` says otherwise
SSH_ROOT_KEY_PATH = "/root/.ssh"


@dataclass(frozen=True, slots=True)
class PluginSpec:
    """A plugin as admission knows it: its flags, the plugins it needs, and the flags
    that name a task it cannot work without."""

    flags: FlagSet
    needs: tuple[str, ...] = ()
    required_tasks: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return self.flags.plugin

    def parse(self, args: Sequence[str]) -> Arguments:
        return self.flags.parse(args)


def _spec(
    name: str,
    defaults: Mapping[str, str | int | bool],
    *,
    ports: Collection[str] = (),
    needs: tuple[str, ...] = (),
    required_tasks: tuple[str, ...] = (),
) -> PluginSpec:
    return PluginSpec(FlagSet(name, defaults, frozenset(ports)), needs, required_tasks)


#: every plugin lavalog runs, by name, in the order they mutate a pod; the distributed
#: frameworks address peers through svc's headless Service and hosts file, and mpi also
#: logs in to them through ssh
CATALOGUE: dict[str, PluginSpec] = {
    spec.name: spec
    for spec in (
        _spec("env", {}),
        _spec(
            "svc",
            {
                "publish-not-ready-addresses": False,
                "disable-network-policy": False,
                "inject-hosts-env": True,
            },
        ),
        _spec(
            "ssh",
            {
                "ssh-key-file-path": SSH_ROOT_KEY_PATH,
                "ssh-private-key": "",
                "ssh-public-key": "",
                "ssh-port": 22,
            },
            ports={"ssh-port"},
        ),
        _spec(
            "tensorflow",
            {**{role: role for role in TENSORFLOW_ROLES}, "port": 2222},
            ports={"port"},
            needs=("svc",),
        ),
        _spec(
            "pytorch",
            {
                "master": "master",
                "worker": "worker",
                "port": 23456,
                "wait-master-enabled": False,
                "wait-master-timeout": 300,
                "wait-master-image": "busybox:1.36.1",
            },
            ports={"port"},
            needs=("svc",),
        ),
        _spec(
            "mpi",
            {"master": "master", "worker": "worker", "port": 22},
            ports={"port"},
            needs=("svc", "ssh"),
            required_tasks=("master",),
        ),
        _spec(
            "ray",
            {
                "head": "head",
                "headContainer": "head",
                "worker": "worker",
                "workerContainer": "worker",
                "port": 6379,
                "dashboardPort": 8265,
                "clientPort": 10001,
            },
            ports={"port", "dashboardPort", "clientPort"},
            needs=("svc",),
            required_tasks=("head",),
        ),
        _spec("hcclrank", {"master": "master", "worker": "worker"}),
    )
}
NAMES = tuple(CATALOGUE)


def with_dependencies(plugins: Mapping[str, Sequence[str]]) -> dict[str, list[str]]:
    """`plugins` plus the plugins they need, with no arguments unless listed (Volcano's
    `mutateSpec` adding svc and ssh)."""
    result = {name: list(args) for name, args in plugins.items()}
    for name in plugins:
        spec = CATALOGUE.get(name)
        for needed in spec.needs if spec else ():
            result.setdefault(needed, [])
    return result


def problems(
    plugins: Mapping[str, Sequence[str]], task_names: Collection[str]
) -> Iterator[tuple[str, str]]:
    """(plugin, why) for each reason to reject a job with these plugins and tasks:
    an unknown name, arguments that do not parse completely, a required task missing."""
    for name, args in plugins.items():
        spec = CATALOGUE.get(name)
        if spec is None:
            yield name, f"unknown plugin; lavalog has {', '.join(NAMES)}"
            continue
        parsed = spec.parse(args)
        if parsed.error:
            yield name, parsed.error
            continue
        for flag in spec.required_tasks:
            task = parsed.text(flag)
            if task not in task_names:
                yield (
                    name,
                    (
                        f"the {name} {flag} task {task!r} does not exist; name an existing task "
                        f"with --{flag}=<task> (the default is {spec.flags.defaults[flag]!r})"
                    ),
                )
