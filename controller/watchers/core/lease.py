"""Who may take the leader Lease, and when: a pure rule over the last sighting of a claim.

A holder's claim expires `duration` seconds after this process first saw its
`renewTime`, on this process's own clock (two machines' clocks are never compared); the
same identity takes its own claim back at once (a restarted process of the holder).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from lavalog.controller.watchers.core.objects import Lease


def micro_time(seconds: float) -> str:
    """metav1.MicroTime, as Lease times are written: `2026-11-21T05:01:33.123456Z`."""
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass(frozen=True, slots=True)
class Sighting:
    """A holder's claim as last seen, and when (on this process's monotonic clock)."""

    holder: str
    renew_time: str | None
    since: float

    @classmethod
    def update(cls, previous: Sighting | None, lease: Lease, now: float) -> Sighting:
        """The sighting after reading `lease`: unchanged claims keep their first time."""
        spec = lease.spec
        if previous and (previous.holder, previous.renew_time) == (
            spec.holder_identity,
            spec.renew_time,
        ):
            return previous
        return cls(spec.holder_identity, spec.renew_time, now)

    def expired(self, duration: float, now: float) -> bool:
        return not self.holder or now >= self.since + duration

    def claimable_by(self, identity: str, duration: float, now: float) -> bool:
        """Whether `identity` may take the Lease now: its own claim at once (the same
        holder, restarted), anyone else's only once it has expired."""
        return self.holder == identity or self.expired(duration, now)
