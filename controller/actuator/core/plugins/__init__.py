"""Job plugins (`spec.plugins`): env, svc, ssh, tensorflow, pytorch, mpi, ray, hcclrank, as in
Volcano.

One module per plugin; `base` says what a plugin is, `args` reads plugin arguments the
way Go's `flag` package does, `registry` maps names to builders. Part of the actuator's
core: must not import I/O libraries (ssh keys come through `PluginContext`).
"""

from lavalog.controller.actuator.core.plugins.base import (
    KeyGenerator,
    KeyPair,
    ObjectRef,
    Plugin,
    PluginContext,
    PluginError,
)
from lavalog.controller.actuator.core.plugins.registry import (
    build_plugins,
    problems,
    with_dependencies,
)

__all__ = [
    "KeyGenerator",
    "KeyPair",
    "ObjectRef",
    "Plugin",
    "PluginContext",
    "PluginError",
    "build_plugins",
    "problems",
    "with_dependencies",
]
