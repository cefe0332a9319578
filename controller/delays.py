"""Exponential delays: the one formula behind every wait that grows with each failure.

The retries of API calls, watches and Kafka deliveries (`retry`), lavalog's restart
backoff (`decider.core.restart_backoff`) and Volcano's requeue of a job whose creates were
refused (`decider.core.refused_creates`) all wait `initial * factor ** n`, at most `cap`.
Pure, so the decider's delays are as deterministic as the rest of it.
"""

from __future__ import annotations


def exponential(initial: float, factor: float, cap: float, failures: int) -> float:
    """The wait after `failures` earlier ones: `initial * factor ** failures`, at most `cap`."""
    try:
        grown = initial * factor ** max(failures, 0)
    except OverflowError:  # a huge factor ** a long count: far past any cap
        return cap
    return min(grown, cap)
