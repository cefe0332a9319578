"""What lavalog's extension annotations share: their names and how a bad one is reported.

Each extension reads its own `lavalog.io/` annotation (`exit_codes`, `restart_backoff`)
and answers with the values it found and a FieldError per bad annotation, which
admission reports like a bad spec field (docs/semantics.md, "Extensions").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TypeVar

from lavalog.events.observations import EXTENSION_PREFIX
from lavalog.events.volcano.api import FieldError

T = TypeVar("T")


def annotation(name: str) -> str:
    """The full name of lavalog's annotation `name` (`lavalog.io/<name>`)."""
    return EXTENSION_PREFIX + name


def annotation_error(name: str, problem: str) -> FieldError:
    """A bad annotation, named by its field path as admission names spec fields."""
    return FieldError(f"metadata.annotations[{name}]", problem)


def read_annotation(
    annotations: Mapping[str, str], name: str, parse: Callable[[str], T | str]
) -> tuple[T | None, list[FieldError]]:
    """The value annotation `name` gives (`parse` answers it, or a sentence saying what is
    wrong): None without the annotation, and the problem as a FieldError."""
    text = annotations.get(name)
    if text is None:
        return None, []
    parsed = parse(text)
    if isinstance(parsed, str):
        return None, [annotation_error(name, parsed)]
    return parsed, []
