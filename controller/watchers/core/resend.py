"""Which observations to publish again after a partly failed send.

A job's facts must reach the log in order: after a failure, every later observation of
that job in the batch is sent again too, even those that were delivered (their ids are
deterministic, so the decider and projections drop the duplicates).
"""

from __future__ import annotations

from collections.abc import Sequence

from lavalog.events.observations import AnyObservation


def to_resend(
    batch: Sequence[AnyObservation], failures: Sequence[BaseException | None]
) -> list[AnyObservation]:
    """The messages to send again: for each job with a failure, all from its first one on."""
    failed_keys: set[str] = set()
    again = []
    for observation, failure in zip(batch, failures, strict=True):
        if failure is not None:
            failed_keys.add(observation.key)
        if observation.key in failed_keys:
            again.append(observation)
    return again
