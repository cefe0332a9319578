"""The leader Lease's three times: client-go's proportions and checks, named by the flags."""

from __future__ import annotations

import math

import pytest

from lavalog.controller.watchers.core.lease import LeaseTiming


def test_a_duration_alone_brings_the_deadline_and_retry_period_in_proportion() -> None:
    timing = LeaseTiming.scaled(6.0)
    assert (timing.duration, timing.renew_deadline, timing.retry_period) == (6.0, 4.0, 2.0)
    assert LeaseTiming.scaled(6.0, retry_period=1.0).renew_deadline == 4.0
    assert LeaseTiming.scaled(6.0, renew_deadline=5.0).retry_period == 2.0


def test_the_defaults_are_in_the_same_proportion() -> None:
    default = LeaseTiming()
    assert LeaseTiming.scaled(default.duration) == default


def test_the_lease_counts_whole_seconds_rounded_up() -> None:
    assert LeaseTiming.scaled(2.5).lease_duration_seconds == 3
    assert LeaseTiming.scaled(15.0).lease_duration_seconds == 15


@pytest.mark.parametrize(
    ("timing", "message"),
    [
        pytest.param(
            {"duration": 5.0, "renew_deadline": 5.0, "retry_period": 1.0},
            r"--lease-renew-deadline \(5.0 s\) must be shorter than --lease-duration \(5.0 s\)",
            id="deadline-not-shorter",
        ),
        pytest.param(
            {"duration": 5.0, "renew_deadline": 3.0, "retry_period": 2.5},
            r"--lease-renew-deadline \(3.0 s\) must be longer than 1.2 x --lease-retry-period",
            id="no-time-to-retry",
        ),
        pytest.param(
            {"duration": 5.0, "renew_deadline": 3.0, "retry_period": 0.0},
            "--lease-retry-period must be positive, not 0.0",
            id="zero-retry",
        ),
        pytest.param(
            {"duration": -1.0, "renew_deadline": 3.0, "retry_period": 1.0},
            "--lease-duration must be positive",
            id="negative",
        ),
        pytest.param(
            {"duration": math.nan, "renew_deadline": 3.0, "retry_period": 1.0},
            "--lease-duration must be positive, not nan",
            id="nan",
        ),
        pytest.param(
            {"duration": 0.9, "renew_deadline": 0.6, "retry_period": 0.3},
            "--lease-duration must be at least 1 s",
            id="under-a-second",
        ),
    ],
)
def test_bad_timings_are_refused_with_the_flag_named(
    timing: dict[str, float], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        LeaseTiming(**timing)
