"""Exponential backoff with jitter, for everything the watchers retry."""

from __future__ import annotations

import random
from collections.abc import Callable


class Backoff:
    """Exponential delays with jitter, so that many clients do not retry in step."""

    def __init__(
        self, initial: float, maximum: float, *, jitter: Callable[[], float] = random.random
    ) -> None:
        self.initial = initial
        self.maximum = maximum
        self._jitter = jitter
        self._failures = 0

    def next_delay(self) -> float:
        """Half to all of `initial * 2**failures`, capped at `maximum`."""
        ceiling = min(self.maximum, self.initial * 2.0**self._failures)
        self._failures += 1
        return ceiling * (0.5 + self._jitter() / 2)

    def reset(self) -> None:
        self._failures = 0
