"""`-o json` and `-o yaml` for every command that prints data: one place that writes them."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from typing import Any, TextIO

import msgspec
import yaml

#: libyaml's dumper when PyYAML was built with it (much faster on large outputs)
DUMPER: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def write_json(value: object, out: TextIO | None = None) -> None:
    """One indented JSON document (Structs, tuples and enums as their JSON form)."""
    (out or sys.stdout).write(json.dumps(msgspec.to_builtins(value), indent=2) + "\n")


def write_yaml(value: object, out: TextIO | None = None) -> None:
    """One YAML document, keys in their declared order."""
    yaml.dump(msgspec.to_builtins(value), out or sys.stdout, Dumper=DUMPER, sort_keys=False)


def write_yaml_stream(values: Iterable[object], out: TextIO | None = None) -> None:
    """A `---`-separated YAML stream, the YAML form of JSON lines."""
    documents = (msgspec.to_builtins(value) for value in values)
    yaml.dump_all(documents, out or sys.stdout, Dumper=DUMPER, sort_keys=False)
