"""The job plugin catalogue: the names, flags and dependencies of Volcano's job plugins, and
how their arguments are read and checked.

Shared vocabulary below its two users, as Volcano's plugins depend on
`plugins/interface`, not on the controller: admission adds the plugins others need and
rejects bad arguments by it, the actuator builds each plugin from the arguments it
parses. Pure: imports neither of them (import-linter checks it).
"""

from lavalog.controller.plugins.args import Arguments, FlagSet
from lavalog.controller.plugins.catalogue import (
    CATALOGUE,
    NAMES,
    PluginSpec,
    problems,
    with_dependencies,
)

__all__ = [
    "CATALOGUE",
    "NAMES",
    "Arguments",
    "FlagSet",
    "PluginSpec",
    "problems",
    "with_dependencies",
]
