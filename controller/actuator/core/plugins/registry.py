"""Which builder makes each plugin of the catalogue, and the job's plugins built in order.

The names, flags and dependencies are the catalogue's (`controller/plugins`); this maps
each name to the module that says what the plugin does, and builds a job's plugins in the
catalogue's order from the arguments the catalogue parses.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

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
from lavalog.controller.actuator.core.plugins.base import Plugin, PluginContext, PluginError
from lavalog.controller.plugins import CATALOGUE, Arguments, with_dependencies

Builder = Callable[[Arguments, PluginContext], Plugin]

#: one builder per name of the catalogue (a unit test checks that the keys match)
BUILDERS: dict[str, Builder] = {
    "env": env.build,
    "svc": svc.build,
    "ssh": ssh.build,
    "tensorflow": tensorflow.build,
    "pytorch": pytorch.build,
    "mpi": mpi.build,
    "ray": ray.build,
    "hcclrank": hcclrank.build,
}


def build_plugins(
    plugins: Mapping[str, Sequence[str]], context: PluginContext | None = None
) -> list[Plugin]:
    """The job's plugins, dependencies included, ready to run in order. Raises
    `PluginError` for what admission rejects (an unknown name, a bad argument)."""
    wanted = with_dependencies(plugins)
    unknown = sorted(set(wanted) - set(CATALOGUE))
    if unknown:
        raise PluginError(f"unable to find job plugin: {', '.join(unknown)}")
    context = context or PluginContext()
    built = []
    for name, spec in CATALOGUE.items():
        if name not in wanted:
            continue
        args = spec.parse(wanted[name])
        if args.error:
            raise PluginError(args.error)
        built.append(BUILDERS[name](args, context))
    return built
