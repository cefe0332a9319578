"""Plugin names a Job may list under `spec.plugins`, and how each is built from its arguments.

Volcano's admission webhook adds the plugins others depend on (svc for tensorflow,
pytorch and mpi; ssh for mpi) before the job is stored; lavalog has no webhook, so
`with_dependencies` does it when plugins are built, which is a no-op for a job Volcano
already admitted. Plugins run in the fixed order below (Volcano walks a Go map, so its
order varies from pod to pod; ours is the same every time).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from controller.actuator.plugins import env, mpi, pytorch, ssh, svc, tensorflow
from controller.actuator.plugins.args import Arguments, FlagSet
from controller.actuator.plugins.base import Plugin, PluginContext, PluginError


@dataclass(frozen=True, slots=True)
class _Entry:
    flags: FlagSet
    build: Callable[[Arguments, PluginContext], Plugin]


_PLUGINS: dict[str, _Entry] = {
    "env": _Entry(env.FLAGS, env.build),
    "svc": _Entry(svc.FLAGS, svc.build),
    "ssh": _Entry(ssh.FLAGS, ssh.build),
    "tensorflow": _Entry(tensorflow.FLAGS, tensorflow.build),
    "pytorch": _Entry(pytorch.FLAGS, pytorch.build),
    "mpi": _Entry(mpi.FLAGS, mpi.build),
}
_NEEDS = {"tensorflow": ("svc",), "pytorch": ("svc",), "mpi": ("svc", "ssh")}

NAMES = tuple(_PLUGINS)


def with_dependencies(plugins: Mapping[str, Sequence[str]]) -> dict[str, list[str]]:
    """`plugins` plus the plugins they need, with no arguments unless listed."""
    result = {name: list(args) for name, args in plugins.items()}
    for name in plugins:
        for needed in _NEEDS.get(name, ()):
            result.setdefault(needed, [])
    return result


def build_plugins(
    plugins: Mapping[str, Sequence[str]], context: PluginContext | None = None
) -> list[Plugin]:
    """The job's plugins, dependencies included, ready to run in order."""
    wanted = with_dependencies(plugins)
    unknown = sorted(set(wanted) - set(_PLUGINS))
    if unknown:
        raise PluginError(f"unable to find job plugin: {', '.join(unknown)}")
    context = context or PluginContext()
    return [
        entry.build(entry.flags.parse(wanted[name]), context)
        for name, entry in _PLUGINS.items()
        if name in wanted
    ]


def argument_errors(plugins: Mapping[str, Sequence[str]]) -> list[str]:
    """Why arguments were partly ignored (Volcano only logs these; report them as events)."""
    errors = (
        _PLUGINS[name].flags.parse(args).error for name, args in plugins.items() if name in _PLUGINS
    )
    return [error for error in errors if error]
