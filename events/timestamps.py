"""Event time: float seconds since the Unix epoch (UTC) in the log, RFC 3339 at the edges.

The log carries plain floats so that the decider does arithmetic on time without
allocating datetimes; Kubernetes objects carry RFC 3339 strings.
"""

from __future__ import annotations

from datetime import UTC, datetime
from functools import lru_cache


def to_rfc3339(seconds: float) -> str:
    """`2026-11-21T05:01:33Z` (whole seconds, as Kubernetes writes metav1.Time)."""
    return _whole_seconds(int(seconds))


@lru_cache(maxsize=4096)
def _whole_seconds(seconds: int) -> str:
    """Cached: the decider stamps every status it writes, and at a high event rate many
    statuses share a second (formatting one costs microseconds, a hit ~0.1)."""
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def from_rfc3339(text: str) -> float:
    """Seconds since the epoch for a Kubernetes timestamp (`Z` or an offset, optional fraction)."""
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
