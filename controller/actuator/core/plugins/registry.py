"""Plugin names a Job may list under `spec.plugins`, and how each is built from its arguments.

Volcano's admission webhook adds the plugins others depend on (svc for tensorflow,
pytorch, mpi and ray; ssh for mpi) before the job is stored; lavalog's admission does the
same with `with_dependencies`, and so does `build_plugins`, a no-op for a job already
admitted. `problems` is what admission checks: known plugin names, arguments that parse
completely, and the tasks a plugin cannot do without. Plugins run in the fixed order
below (Volcano walks a Go map, so its order varies from pod to pod; ours is the same
every time, and hcclrank comes after pytorch so that it reads pytorch's `RANK`).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass

from lavalog.controller.actuator.core.plugins import (
    env,
    hcclrank,
    mpi,
    pytorch,
    ray,
    ssh,
    svc,
    tensorflow,
)
from lavalog.controller.actuator.core.plugins.args import Arguments, FlagSet
from lavalog.controller.actuator.core.plugins.base import Plugin, PluginContext, PluginError


@dataclass(frozen=True, slots=True)
class _Entry:
    flags: FlagSet
    build: Callable[[Arguments, PluginContext], Plugin]
    #: flags naming a task the plugin cannot work without
    required_tasks: tuple[str, ...] = ()


_PLUGINS: dict[str, _Entry] = {
    "env": _Entry(env.FLAGS, env.build),
    "svc": _Entry(svc.FLAGS, svc.build),
    "ssh": _Entry(ssh.FLAGS, ssh.build),
    "tensorflow": _Entry(tensorflow.FLAGS, tensorflow.build),
    "pytorch": _Entry(pytorch.FLAGS, pytorch.build),
    "mpi": _Entry(mpi.FLAGS, mpi.build, required_tasks=("master",)),
    "ray": _Entry(ray.FLAGS, ray.build, required_tasks=("head",)),
    "hcclrank": _Entry(hcclrank.FLAGS, hcclrank.build),
}
#: plugins that need others: the distributed frameworks address peers through svc's
#: headless Service and hosts file, and mpi also logs in to them through ssh
NEEDS: dict[str, tuple[str, ...]] = {
    "tensorflow": ("svc",),
    "pytorch": ("svc",),
    "mpi": ("svc", "ssh"),
    "ray": ("svc",),
}

NAMES = tuple(_PLUGINS)


def with_dependencies(plugins: Mapping[str, Sequence[str]]) -> dict[str, list[str]]:
    """`plugins` plus the plugins they need, with no arguments unless listed."""
    result = {name: list(args) for name, args in plugins.items()}
    for name in plugins:
        for needed in NEEDS.get(name, ()):
            result.setdefault(needed, [])
    return result


def build_plugins(
    plugins: Mapping[str, Sequence[str]], context: PluginContext | None = None
) -> list[Plugin]:
    """The job's plugins, dependencies included, ready to run in order. Raises
    `PluginError` for what admission rejects (an unknown name, a bad argument)."""
    wanted = with_dependencies(plugins)
    unknown = sorted(set(wanted) - set(_PLUGINS))
    if unknown:
        raise PluginError(f"unable to find job plugin: {', '.join(unknown)}")
    context = context or PluginContext()
    built = []
    for name, entry in _PLUGINS.items():
        if name not in wanted:
            continue
        args = entry.flags.parse(wanted[name])
        if args.error:
            raise PluginError(args.error)
        built.append(entry.build(args, context))
    return built


def problems(
    plugins: Mapping[str, Sequence[str]], task_names: Collection[str]
) -> Iterator[tuple[str, str]]:
    """(plugin, why) for each reason to reject a job with these plugins and tasks."""
    for name, args in plugins.items():
        entry = _PLUGINS.get(name)
        if entry is None:
            yield name, f"unknown plugin; lavalog has {', '.join(NAMES)}"
            continue
        parsed = entry.flags.parse(args)
        if parsed.error:
            yield name, parsed.error
            continue
        for flag in entry.required_tasks:
            task = parsed.text(flag)
            if task not in task_names:
                yield (
                    name,
                    (
                        f"the {name} {flag} task {task!r} does not exist; name an existing task "
                        f"with --{flag}=<task> (the default is {entry.flags.defaults[flag]!r})"
                    ),
                )
