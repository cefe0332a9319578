"""Every kind of observation and decision is final: the decider dispatches on the exact
type of what it is given (`type(x) is PodObserved`), so a subclass of a kind would be
taken for none of them."""

from __future__ import annotations

from typing import get_args

from lavalog.events.decisions import AnyDecision
from lavalog.events.observations import AnyObservation


def test_no_kind_of_observation_or_decision_has_a_subclass() -> None:
    kinds = [*get_args(AnyObservation), *get_args(AnyDecision)]

    assert len(kinds) > 20
    assert {kind: kind.__subclasses__() for kind in kinds if kind.__subclasses__()} == {}
