"""The scale-out benchmark's arithmetic: the watchers' rate from the records' timestamps,
and what watching cost the leader from each replica's CPU time."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from bench.scaleout import Outcome, Replica, observed_rate, watchers_cost


def record(at: float) -> SimpleNamespace:
    return SimpleNamespace(timestamp=int(at * 1000))


def test_observed_rate_counts_the_window_from_its_first_record() -> None:
    records = [record(99.0)] + [record(100.0 + i / 10) for i in range(30)] + [record(200.0)]

    count, mean, busiest = observed_rate(records, since=100.0, until=104.0)

    assert count == 30  # before `since` and after `until` left out
    assert mean == pytest.approx(30 / 4.0)
    assert busiest == 10  # ten records in each of the first three seconds


def test_observed_rate_without_records() -> None:
    assert observed_rate([], since=0.0, until=1.0) == (0, 0.0, 0.0)


def outcome(leader_cpu: float) -> Outcome:
    members = [
        Replica(leader=True, cpu_seconds=leader_cpu, observations=1_000),
        Replica(leader=False, cpu_seconds=0.4, observations=1_000),
    ]
    return Outcome(
        replicas=2, pods=1.0, running=1.0, observed=2_000, mean_rate=0.0, peak_rate=0.0,
        members=members,
    )  # fmt: skip


def test_watchers_cost_is_the_leader_cpu_beyond_its_share() -> None:
    # followers: 400 µs per observation decided; the leader decided 1,000 (0.4 s) and
    # watched 2,000 observations in the other 0.2 s: 100 µs each
    text = watchers_cost(outcome(0.6), jobs=250)

    assert "0.2 CPU s (100 µs per observation, 8.0 observations per Job)" in text
    assert "400 µs per observation" in text
    assert "at most 3,333 observations/s" in text  # 1 / (100 µs + 400 µs / 2)
    assert "alone: 10,000 observations/s (1,250 one-pod Jobs/s)" in text


def test_watchers_cost_when_the_leader_spent_no_more_than_its_share() -> None:
    assert "no more CPU than its share" in watchers_cost(outcome(0.4), jobs=250)
