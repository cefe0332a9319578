"""Durations print as Go's `time.Duration.String()` (its own table, time_test.go), which is
how Volcano writes `runningDuration` and the delay of "Execute action X after D"."""

from __future__ import annotations

import pytest

from lavalog.events.durations import format_duration, parse_duration

GO = [
    ("0s", 0.0),
    ("1ns", 1e-9),
    ("1.1µs", 1.1e-6),
    ("2.2ms", 2.2e-3),
    ("3.3s", 3.3),
    ("4m5s", 245.0),
    ("4m5.001s", 245.001),
    ("5h6m7.001s", 18367.001),
    ("-500ms", -0.5),
]


@pytest.mark.parametrize(("text", "seconds"), GO)
def test_format_as_go_does(text: str, seconds: float) -> None:
    assert format_duration(seconds) == text


@pytest.mark.parametrize(("text", "seconds"), GO)
def test_parse_what_go_prints(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)
