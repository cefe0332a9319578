"""Plugin arguments (`tensorflow: ["--ps=ps", "--port=2222"]`), read as Volcano reads them.

Volcano parses each plugin's list with Go's `flag` package: `-name`, `--name`,
`--name=value`, `--name value` (non-boolean flags), a bare boolean flag means true,
integers in Go's notation (`0x10`). Go stops at the first non-flag argument, at `--` and
at the first error, and Volcano only logs that error, so a Job with a typo silently runs
with the flags read before it. Here every such stop is an error (`Arguments.error`),
which admission turns into a rejection of the Job; the values read are the same as Go's.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

Value = str | int | bool

_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})
_MAX_PORT = 65535


@dataclass(frozen=True, slots=True)
class Arguments:
    """Parsed values (defaults for flags not given) and why parsing stopped early, if it did."""

    values: Mapping[str, Value]
    error: str = ""

    def text(self, name: str) -> str:
        value = self.values[name]
        assert isinstance(value, str)
        return value

    def number(self, name: str) -> int:
        value = self.values[name]
        assert isinstance(value, int) and not isinstance(value, bool)
        return value

    def flag(self, name: str) -> bool:
        value = self.values[name]
        assert isinstance(value, bool)
        return value


@dataclass(frozen=True, slots=True)
class FlagSet:
    """A plugin's flags and their defaults; a default's type is the flag's type. Flags in
    `ports` must be TCP port numbers (1-65535)."""

    plugin: str
    defaults: Mapping[str, Value]
    ports: Collection[str] = field(default_factory=frozenset)

    def parse(self, args: Sequence[str]) -> Arguments:
        values = dict(self.defaults)
        rest = list(args)
        while rest:
            arg = rest.pop(0)
            if arg == "--" or len(arg) < 2 or not arg.startswith("-"):
                ignored = [arg, *rest] if arg != "--" else rest
                if not ignored:
                    break
                return self._stop(
                    values,
                    f"{ignored[0]!r} is not a flag, and Volcano would silently ignore it and "
                    "everything after it; write flags as --name=value",
                )
            name, has_value, value = arg.lstrip("-").partition("=")
            if arg.startswith("---") or not name or name.startswith("="):
                return self._stop(values, f"bad flag syntax: {arg}")
            if name not in values:
                return self._stop(values, f"flag provided but not defined: -{name}{self._known()}")
            default = values[name]
            if isinstance(default, bool):
                if has_value and value not in _TRUE | _FALSE:
                    return self._stop(values, f'invalid boolean value "{value}" for -{name}')
                values[name] = not has_value or value in _TRUE
                continue
            if not has_value:
                if not rest:
                    return self._stop(values, f"flag needs an argument: -{name}")
                value = rest.pop(0)
            if isinstance(default, int):
                try:
                    number = int(value, 0)
                except ValueError:
                    return self._stop(values, f'invalid value "{value}" for flag -{name}')
                if name in self.ports and not 0 < number <= _MAX_PORT:
                    return self._stop(
                        values, f"-{name}={number} is not a port number; use 1 to {_MAX_PORT}"
                    )
                values[name] = number
            else:
                values[name] = value
        return Arguments(values)

    def _known(self) -> str:
        if not self.defaults:
            return f" ({self.plugin} takes no flags)"
        return f" ({self.plugin} takes {', '.join('--' + name for name in self.defaults)})"

    def _stop(self, values: Mapping[str, Value], error: str) -> Arguments:
        return Arguments(values, f"plugin {self.plugin}: {error}")
