"""Restart backoff: a lavalog extension that delays each restart a policy chooses.

Volcano restarts at once (or after a policy's `timeout`), so a job that fails at start
restarts in a tight loop until `maxRetry`. lavalog reads an exponential backoff from one
Job annotation, leaving the spec plain Volcano YAML (Volcano ignores the annotation):

    lavalog.io/restart-backoff: "10s,2,5m"   # INITIAL,FACTOR,CAP

The n-th restart of the job (n counted from 0, as `status.retryCount` counts) waits
`min(INITIAL * FACTOR**n, CAP)`. docs/semantics.md, "Extensions", has the rules.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from lavalog.controller.admission.annotations import annotation, read_annotation
from lavalog.events.durations import parse_duration
from lavalog.events.extensions import RestartBackoff
from lavalog.events.volcano.api import Action, FieldError

ANNOTATION = annotation("restart-backoff")
#: the actions a backoff delays: every restart, i.e. every action that counts a retry
RESTART_ACTIONS = frozenset(
    {Action.RESTART_JOB, Action.RESTART_TASK, Action.RESTART_POD, Action.RESTART_PARTITION}
)
_FACTOR = re.compile(r"\d+(\.\d+)?")
_EXAMPLE = 'e.g. "10s,2,5m" (initial delay, growth factor, longest delay)'


def parse_backoff(text: str) -> RestartBackoff | str:
    """A RestartBackoff, or what is wrong with `text` (a sentence for an error message)."""
    parts = [part.strip() for part in text.split(",")]
    if len(parts) != 3:
        return f"{text!r} must be three values INITIAL,FACTOR,CAP, {_EXAMPLE}"
    initial_text, factor_text, cap_text = parts
    initial = _positive_duration("INITIAL", initial_text)
    if isinstance(initial, str):
        return initial
    if not _FACTOR.fullmatch(factor_text) or float(factor_text) < 1:
        return f"FACTOR {factor_text!r} must be a number of at least 1 (1 keeps the delay fixed)"
    cap = _positive_duration("CAP", cap_text)
    if isinstance(cap, str):
        return cap
    if cap < initial:
        return f"CAP {cap_text} is shorter than INITIAL {initial_text}: no delay could reach it"
    return RestartBackoff(initial=initial, factor=float(factor_text), cap=cap)


def restart_backoff(
    annotations: Mapping[str, str],
) -> tuple[RestartBackoff | None, list[FieldError]]:
    """The backoff the annotations give (None without the annotation), and its problem."""
    return read_annotation(annotations, ANNOTATION, parse_backoff)


def _positive_duration(name: str, text: str) -> float | str:
    try:
        seconds = parse_duration(text) if text else -1.0
    except ValueError:
        seconds = -1.0
    if seconds <= 0:
        return f"{name} {text!r} must be a positive duration such as 500ms, 10s, 5m or 1h"
    return seconds
