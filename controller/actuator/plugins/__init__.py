"""Job plugins (`spec.plugins`): env, svc, ssh, tensorflow, pytorch, mpi, as in Volcano.

One module per plugin; `base` says what a plugin is, `args` reads plugin arguments the
way Go's `flag` package does, `registry` maps names to builders.
"""

from controller.actuator.plugins.base import (
    KeyGenerator,
    KeyPair,
    Plugin,
    PluginContext,
    PluginError,
)
from controller.actuator.plugins.registry import argument_errors, build_plugins, with_dependencies

__all__ = [
    "KeyGenerator",
    "KeyPair",
    "Plugin",
    "PluginContext",
    "PluginError",
    "argument_errors",
    "build_plugins",
    "with_dependencies",
]
