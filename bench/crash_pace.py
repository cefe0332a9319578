"""The pace of the reaction benchmark's background crashes, apart from the crashing.

The rate asked is of observations, but what the benchmark controls is crashes, and how
many observations a crash brings depends on the controller (its deletes, creates and
status writes are observed again). So the pace is calibrated once, at the run's start:
crashes spread evenly at a guessed pace, and once the controller has settled into them,
the observations published per crash made over a window. From then on the crashes come at
that fixed pace, whatever is published: every arm is offered the same load, and an arm
that falls behind is not crashed harder to make up the observations it has not caused
yet (a pace fed back from what is published does that, and its backlog only grows).
A window longer than a crash's observations take to arrive measures the ratio whatever
that delay, where a count since the start is short by every crash still arriving. The
timed crashes publish observations of their own, while a turn measures: the first turn
that measures says how many a second (`leave_room`), and the background asks that many
less from then on, so that all of them together come to the rate asked.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class CrashPace:
    """Crashes due at `rate` observations/s; fed the published count by `measured`
    until `calibrated`."""

    rate: float
    #: observations/s of the rate left to the timed crashes (`leave_room`)
    room: float | None = None
    #: observations per crash, guessed until calibrated
    per_crash: float = 12.0
    #: seconds the controller is given to settle into the guessed pace
    settle: float = 2.0
    #: seconds the observations per crash are measured over
    window: float = 3.0
    calibrated: bool = False
    _started: float = 0.0
    _last: float = 0.0
    _owed: float = 0.0
    #: (crashes, published) when the window opened
    _opened: tuple[int, int] | None = None

    def start_turn(self, now: float) -> None:
        """A turn begins (a new controller): nothing owed yet."""
        self._started = self._last = now
        self._owed = 0.0
        self._opened = None

    def due(self, now: float) -> int:
        """Crashes to make now. What is not made now is not owed later: a burst to catch
        up would load the controller more than the rate asked."""
        self._owed += (now - self._last) * self.background_rate / self.per_crash
        self._last = now
        whole = int(self._owed)
        self._owed -= whole
        return whole

    @property
    def background_rate(self) -> float:
        """Observations/s the background's crashes are to bring."""
        return self.rate - (self.room or 0.0)

    def leave_room(self, seconds: float, crashes: int, published: int) -> None:
        """Over `seconds` of a turn that measured, the background made `crashes` and
        `published` observations were published in all: what the background did not
        bring, the timed crashes did. Once; at most half the rate is left to them."""
        if self.room is None and seconds > 0:
            theirs = (published - crashes * self.per_crash) / seconds
            self.room = min(max(0.0, theirs), self.rate / 2)

    def measured(self, now: float, crashes: int, published: int) -> None:
        """The crashes made and observations published so far (running totals)."""
        if self.calibrated or now - self._started < self.settle:
            return
        if self._opened is None:
            self._opened = (crashes, published)
        elif now - self._started >= self.settle + self.window:
            crashes_then, published_then = self._opened
            if crashes > crashes_then:
                self.per_crash = max(1.0, (published - published_then) / (crashes - crashes_then))
                self.calibrated = True
