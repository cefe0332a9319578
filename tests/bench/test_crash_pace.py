"""The reaction benchmark's crash pace: calibrated once to the rate asked, whatever a
crash brings and however late, then fixed, whatever the controller makes of it."""

from __future__ import annotations

import bisect
import itertools

import pytest

from bench.crash_pace import CrashPace

TICK = 0.01


def simulate(
    pace: CrashPace,
    *,
    per_crash: int,
    spread: float,
    slow_after: float = 99.0,
    timed: float = 0.0,
) -> tuple[list[float], list[float]]:
    """Ten seconds of a turn read as the benchmark reads it (every 0.2 s): each crash
    brings `per_crash` observations spread evenly over `spread` seconds after it (ten times
    that from `slow_after` on: the controller behind), and the turn's new controller lists
    500 observations in its first half second; from 5 s on the timed crashes publish
    `timed` observations/s, and what they publish to 6 s leaves them room. The crashes'
    and observations' times."""
    pace.start_turn(0.0)
    crashes: list[float] = []
    observations = [0.5 * i / 500 for i in range(500)]
    observations += [5.0 + i / timed for i in range(int(5.0 * timed))] if timed else []
    before_room: tuple[int, int] | None = None
    for step in itertools.count():
        now = step * TICK
        if now >= 10.0:
            return crashes, sorted(observations)
        if step % 20 == 0:
            seen = bisect.bisect_right(sorted(observations), now)
            pace.measured(now, len(crashes), seen)
            if timed and now == pytest.approx(5.0):
                before_room = (len(crashes), seen)
            elif before_room is not None and now == pytest.approx(6.0):
                made, published = before_room
                pace.leave_room(1.0, len(crashes) - made, seen - published)
        late = spread * (10 if now >= slow_after else 1)
        for _ in range(pace.due(now)):
            crashes.append(now)
            observations += [now + late * (k + 1) / per_crash for k in range(per_crash)]
    raise AssertionError("unreachable")


def per_second(times: list[float], start: float, end: float) -> float:
    return (bisect.bisect_right(times, end) - bisect.bisect_right(times, start)) / (end - start)


@pytest.mark.parametrize(
    ("rate", "per_crash", "spread"), [(1000, 12, 0.3), (300, 8, 0.6), (1000, 20, 0.05)]
)
def test_once_calibrated_the_crashes_publish_the_rate_asked(
    rate: float, per_crash: int, spread: float
) -> None:
    pace = CrashPace(rate)

    _, observations = simulate(pace, per_crash=per_crash, spread=spread)

    assert pace.calibrated
    assert per_second(observations, 6.0, 10.0) == pytest.approx(rate, rel=0.03)


def test_the_timed_crashes_observations_are_left_out_of_the_backgrounds() -> None:
    pace = CrashPace(1000)

    _, observations = simulate(pace, per_crash=12, spread=0.3, timed=150)

    assert pace.room == pytest.approx(150, rel=0.1)
    assert per_second(observations, 7.0, 10.0) == pytest.approx(1000, rel=0.03)


def test_at_most_half_the_rate_is_left_to_the_timed_crashes() -> None:
    pace = CrashPace(100, per_crash=10.0)
    pace.leave_room(1.0, crashes=1, published=500)

    assert pace.background_rate == 50
    pace.leave_room(1.0, crashes=10, published=100)  # once
    assert pace.background_rate == 50


def test_a_controller_falling_behind_is_not_crashed_harder() -> None:
    pace = CrashPace(1000)

    crashes, observations = simulate(pace, per_crash=12, spread=0.3, slow_after=6.0)

    assert per_second(observations, 7.0, 10.0) < 900  # its observations come late
    assert per_second(crashes, 7.0, 10.0) == pytest.approx(per_second(crashes, 5.5, 6.0), rel=0.05)


def test_a_crash_not_made_when_it_was_due_is_not_made_up_later_in_a_burst() -> None:
    pace = CrashPace(1000, per_crash=10.0)
    pace.start_turn(0.0)

    assert pace.due(0.5) == 50  # none made: no pod was running
    assert pace.due(0.51) == 1
