"""Event time: float seconds since the Unix epoch (UTC) in the log, RFC 3339 at the edges.

The log carries plain floats so that the decider does arithmetic on time without
allocating datetimes; Kubernetes objects carry RFC 3339 strings.
"""

from __future__ import annotations

from datetime import UTC, datetime


def to_rfc3339(seconds: float) -> str:
    """`2026-11-21T05:01:33Z` (whole seconds, as Kubernetes writes metav1.Time)."""
    return datetime.fromtimestamp(int(seconds), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def from_rfc3339(text: str) -> float:
    """Seconds since the epoch for a Kubernetes timestamp (`Z` or an offset, optional fraction)."""
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
