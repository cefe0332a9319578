"""How long the actuator waits between tries of an API call.

A transient failure (`lavalog.controller.kube.is_transient`: throttled, a server error, a
dropped connection, a timeout) says nothing about the request, so the same request is
sent again after a growing delay, until it answers: giving up would skip a decision.
Any other error answer is permanent for that request and is the caller's to handle.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Backoff:
    """Exponential delays: `initial`, times `factor` per attempt, at most `cap` seconds."""

    initial: float = 0.05
    factor: float = 2.0
    cap: float = 10.0

    def delay(self, attempt: int) -> float:
        """The wait after failed attempt number `attempt` (0 for the first)."""
        return min(self.cap, self.initial * self.factor ** min(attempt, 64))

