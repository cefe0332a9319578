"""Who may take the leader Lease, and when: a pure rule over the last sighting of a claim,
and the three times that pace the election.

A holder's claim expires `duration` seconds after this process first saw its
`renewTime`, on this process's own clock (two machines' clocks are never compared); the
same identity takes its own claim back at once (a restarted process of the holder).
"""

from __future__ import annotations

import math
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


#: client-go's leaderelection.JitterFactor: a renewal deadline must leave room for a retry
JITTER_FACTOR = 1.2
#: balanced against the groups' default 6 s session: a replacement under a new identity
#: finds its Lease and its partitions at about the same time (docs/benchmarks.md)
DEFAULT_DURATION = 10.0


@dataclass(frozen=True, kw_only=True, slots=True)
class LeaseTiming:
    """How long a claim lasts, and how often it is renewed and tried for, in seconds.

    As client-go's LeaderElectionConfig (and Volcano's `--leader-elect-*` flags): the
    leader renews every `retry_period` and steps down once `renew_deadline` has passed
    since its last renewal, before any candidate may count the claim (`duration`) as
    expired; a candidate tries every `retry_period`. A replacement under a new identity
    leads `duration` to `duration + retry_period` after the old leader's last renewal;
    each replica makes one Lease call per `retry_period`.
    """

    duration: float = DEFAULT_DURATION
    renew_deadline: float = DEFAULT_DURATION * 2 / 3
    retry_period: float = DEFAULT_DURATION / 3

    def __post_init__(self) -> None:
        """The checks of client-go's NewLeaderElector, with the flags' names."""
        for name in ("duration", "renew_deadline", "retry_period"):
            value = getattr(self, name)
            if not math.isfinite(value) or value <= 0:
                raise ValueError(f"--lease-{name.replace('_', '-')} must be positive, not {value}")
        if self.duration < 1:
            raise ValueError(
                f"--lease-duration must be at least 1 s (a Lease counts whole seconds), "
                f"not {self.duration}"
            )
        if self.renew_deadline >= self.duration:
            raise ValueError(
                f"--lease-renew-deadline ({self.renew_deadline} s) must be shorter than "
                f"--lease-duration ({self.duration} s): a leader must step down before "
                "another replica may take its claim"
            )
        if self.renew_deadline <= JITTER_FACTOR * self.retry_period:
            raise ValueError(
                f"--lease-renew-deadline ({self.renew_deadline} s) must be longer than "
                f"{JITTER_FACTOR} x --lease-retry-period ({self.retry_period} s): a failed "
                "renewal must have time to be retried"
            )

    @classmethod
    def scaled(
        cls,
        duration: float,
        *,
        renew_deadline: float | None = None,
        retry_period: float | None = None,
    ) -> LeaseTiming:
        """`duration`, with the others (where not given) in the defaults' proportions:
        the deadline 2/3 of it, the retry period 1/3."""
        return cls(
            duration=duration,
            renew_deadline=duration * 2 / 3 if renew_deadline is None else renew_deadline,
            retry_period=duration / 3 if retry_period is None else retry_period,
        )

    @property
    def lease_duration_seconds(self) -> int:
        """`spec.leaseDurationSeconds`: whole seconds, rounded up so no claim is shortened."""
        return max(1, math.ceil(self.duration))
