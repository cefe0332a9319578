"""Volcano's rules for changing a running job (`validateJobUpdate`): it may be scaled, no more.

A job keeps its tasks, policies, plugins and templates for life; an update may only
change how many pods run and how many failures they may have.
"""

from __future__ import annotations

from collections.abc import Iterator

import msgspec

from lavalog.controller.admission.rules import check_ranges
from lavalog.events.volcano.api import FieldError, JobSpec, TaskSpec

#: fields an update may change (Volcano copies the old values over them before comparing)
MUTABLE_JOB_FIELDS = frozenset({"min_available", "max_retry", "priority_class_name", "tasks"})
MUTABLE_TASK_FIELDS = frozenset({"replicas", "min_available", "max_retry"})
_MUTABLE = (
    "minAvailable, maxRetry, priorityClassName and the tasks' replicas, minAvailable and maxRetry"
)


def check_update(old: JobSpec, new: JobSpec, given: JobSpec) -> list[FieldError]:
    """Every reason why `new` may not replace `old`; both are defaulted, and `new` is
    `given` with defaults."""
    errors = list(check_ranges(new, given))
    if len(old.tasks) != len(new.tasks):
        errors.append(
            FieldError(
                "spec.tasks",
                f"an update may not add or remove tasks ({len(old.tasks)} before, "
                f"{len(new.tasks)} now); scale a task's replicas, or create a new job",
            )
        )
    else:
        for index, (before, after) in enumerate(zip(old.tasks, new.tasks, strict=True)):
            errors += _changes(before, after, MUTABLE_TASK_FIELDS, f"spec.tasks[{index}]")
    errors += _changes(_comparable(old), _comparable(new), MUTABLE_JOB_FIELDS, "spec")
    return errors


def _changes(
    before: JobSpec | TaskSpec, after: JobSpec | TaskSpec, mutable: frozenset[str], prefix: str
) -> Iterator[FieldError]:
    for field in msgspec.structs.fields(before):
        if field.name not in mutable and getattr(before, field.name) != getattr(after, field.name):
            yield FieldError(
                f"{prefix}.{field.encode_name}",
                f"may not change on an existing job; only {_MUTABLE} can",
            )


def _comparable(spec: JobSpec) -> JobSpec:
    """Without the claim names the controller fills in for volumes it creates, as Volcano
    ignores them when comparing."""
    volumes = tuple(
        {key: value for key, value in volume.items() if key != "volumeClaimName"}
        if volume.get("volumeClaim") is not None
        else volume
        for volume in spec.volumes
    )
    return msgspec.structs.replace(spec, volumes=volumes)
