"""Which part of a Job's `status` lavalog writes, and how it leaves the rest alone.

lavalog takes the place of Volcano's job controller, so it owns the fields that
controller writes (`JobStatus`). A status write replaces exactly those: a field another
writer added, or one a newer Volcano API version has and this lavalog does not know, is
kept as it is on the Job. In `controlledResources`, the job controller's entries are
`plugin-<name>` and `volume-pvc-<claim>`; any other key belongs to someone else and
stays. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: keys of `controlledResources` that Volcano's job controller (so lavalog) writes
CONTROLLER_RESOURCE_PREFIXES = ("plugin-", "volume-pvc-")
_RESOURCES = "controlledResources"


def merged_status(current: Mapping[str, Any] | None, written: Mapping[str, Any]) -> dict[str, Any]:
    """The Job's status after writing `written` (lavalog's fields; None or empty means
    absent) over `current`."""
    merged = dict(current or {})
    for field, value in _without_nulls(written).items():
        if field != _RESOURCES:
            merged[field] = value
    for field, value in written.items():
        if value is None:
            merged.pop(field, None)
    others = {
        key: value
        for key, value in ((current or {}).get(_RESOURCES) or {}).items()
        if not key.startswith(CONTROLLER_RESOURCE_PREFIXES)
    }
    resources = {**others, **(written.get(_RESOURCES) or {})}
    if resources:
        merged[_RESOURCES] = resources
    else:
        merged.pop(_RESOURCES, None)
    return merged


def _without_nulls(value: Any) -> Any:
    """JSON without its null members (a real API server prunes them anyway)."""
    if isinstance(value, Mapping):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value
