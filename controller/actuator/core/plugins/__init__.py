"""Job plugins (`spec.plugins`): env, svc, ssh, tensorflow, pytorch, mpi, ray, hcclrank, as in
Volcano: what each does to a pod and which objects it needs beside the pods.

One module per plugin; `base` says what a plugin is, `registry` maps the catalogue's names
(`controller/plugins`: names, flags, dependencies) to builders. Part of the actuator's
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
from lavalog.controller.actuator.core.plugins.registry import build_plugins

__all__ = [
    "KeyGenerator",
    "KeyPair",
    "ObjectRef",
    "Plugin",
    "PluginContext",
    "PluginError",
    "build_plugins",
]
