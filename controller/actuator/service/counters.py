"""What the actuator has done so far, for logs, tests and `/metrics`."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class Counters:
    #: decisions carried out (or found already done)
    applied: int = 0
    #: API calls sent again after a transient failure
    retried: int = 0
    #: decisions given up on a permanent error (reported as a Warning Event on the Job)
    failed: int = 0
    #: decisions whose creates the API server refused (reported, retried by the decider)
    refused: int = 0
    #: decisions about a Job that is gone or was replaced by a new one of the same name
    skipped: int = 0
    #: status writes not made: a later one for the same Job was queued behind them
    coalesced: int = 0
    #: decisions received again (the decider produced them twice) after being carried out
    repeated: int = 0
    #: decisions with nothing to carry out: the decider's own records (a cancelled timer,
    #: an admission), a phase change without `--phase-events`
    ignored: int = 0
    #: Kubernetes Events not written: counted into another or over their object's budget
    #: (`core.event_correlation`)
    events_filtered: int = 0
    #: Kubernetes Events given up: too many waiting, or refused by the API server
    events_dropped: int = 0
    #: seconds API calls spent waiting for the rate limiter (its slots and tokens), added up
    limiter_wait_seconds: float = 0.0
    #: decisions received from this process's decider without a fetch (`local_delivery`)
    delivered_here: int = 0

    @property
    def handled(self) -> int:
        """Decisions taken off their lanes: carried out, refused, failed, skipped, coalesced,
        repeated or ignored."""
        return (
            self.applied
            + self.refused
            + self.failed
            + self.skipped
            + self.coalesced
            + self.repeated
            + self.ignored
        )
