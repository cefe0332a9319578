"""The decider benchmark's reading of the ways `step` decides facts: which way each fact
goes, and the rate left when a way is taken as free."""

from __future__ import annotations

import pytest

from bench.decider import (
    EVERY_RULE,
    NO_NEWS,
    ROUTINE,
    PathCost,
    lifecycle_script,
    path_of,
    rate_without,
    until_running,
)
from lavalog.controller.decider.core import initial_state, step


def test_each_fact_until_running_is_filed_by_the_way_step_decides_it() -> None:
    script = lifecycle_script("train", "team", 20, workers=2)
    events = script.events[: until_running(2)]
    state = initial_state(events[0].key)
    ways = []
    for observation in events:
        ways.append(path_of(state, observation))
        state, _ = step(state, observation)

    assert ways == [
        EVERY_RULE,  # the Job: admitted, its PodGroup asked for
        EVERY_RULE,  # the PodGroup Inqueue: the pods asked for
        NO_NEWS,  # the ps Pending, as it was asked for
        ROUTINE,  # the ps Running: the counts move, the phase does not
        NO_NEWS,  # the workers Pending, as asked for
        NO_NEWS,
        ROUTINE,  # the first worker Running
        EVERY_RULE,  # the last pod Running: the Job is Running
    ]


def test_the_rate_left_takes_out_the_time_of_the_free_ways_only() -> None:
    costs = {
        (EVERY_RULE, "PodObserved"): PathCost(facts=10, seconds=0.5),
        (ROUTINE, "PodObserved"): PathCost(facts=20, seconds=0.3),
        (NO_NEWS, "PodObserved"): PathCost(facts=70, seconds=0.2),
    }

    assert rate_without(costs, frozenset({EVERY_RULE})) == pytest.approx(100 / 0.5)
    assert rate_without(costs, frozenset({EVERY_RULE, ROUTINE})) == pytest.approx(100 / 0.2)
