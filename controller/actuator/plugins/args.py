"""Plugin arguments (`tensorflow: ["--ps=ps", "--port=2222"]`), read as Volcano reads them.

Volcano parses each plugin's list with Go's `flag` package (`ContinueOnError`) and only
logs a parse error, so a Job with a bad argument still runs with the flags read before
it. The same is done here: `-name`, `--name`, `--name=value`, `--name value` (non-boolean
flags), a bare boolean flag means true; parsing stops at the first non-flag argument, at
`--`, and at the first error, whose message is kept for the caller to report.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

Value = str | int | bool

_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})


@dataclass(frozen=True, slots=True)
class Arguments:
    """Parsed values (defaults for flags not given) and the error that stopped parsing."""

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
    """A plugin's flags and their defaults; a default's type is the flag's type."""

    plugin: str
    defaults: Mapping[str, Value]

    def parse(self, args: Sequence[str]) -> Arguments:
        values = dict(self.defaults)
        rest = list(args)
        while rest:
            arg = rest.pop(0)
            if arg == "--":
                break
            if len(arg) < 2 or not arg.startswith("-"):
                break
            name, has_value, value = arg.lstrip("-").partition("=")
            if arg.startswith("---") or not name or name.startswith("="):
                return self._stop(values, f"bad flag syntax: {arg}")
            if name not in values:
                return self._stop(values, f"flag provided but not defined: -{name}")
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
                    values[name] = int(value, 0)
                except ValueError:
                    return self._stop(values, f'invalid value "{value}" for flag -{name}')
            else:
                values[name] = value
        return Arguments(values)

    def _stop(self, values: Mapping[str, Value], error: str) -> Arguments:
        return Arguments(values, f"plugin {self.plugin}: {error}")
