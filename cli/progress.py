"""A one-line progress bar on stderr, for `lavalog projections rebuild`.

Drawn only on a terminal (a log file gets the final line, not a hundred redraws), and
only once there is something to show: while the source is still connecting, "0/0"
would claim 100 %.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

WIDTH = 30


class ProgressBar:
    def __init__(self, *, stream: TextIO | None = None) -> None:
        # looked up when drawing starts, not at import: stderr may have been replaced since
        self._stream = sys.stderr if stream is None else stream
        self._started = time.monotonic()
        self._shown = 0.0
        self._drawn = False

    def update(self, done: int, total: int, *, force: bool = False) -> None:
        """Redraw at most ten times a second (always when `force`)."""
        if not (done or total) or not self._stream.isatty():
            return
        now = time.monotonic()
        if not force and now - self._shown < 0.1:
            return
        self._shown = now
        fraction = min(1.0, done / total) if total else 1.0
        filled = int(fraction * WIDTH)
        rate = done / max(now - self._started, 1e-9)
        self._stream.write(
            f"\r[{'#' * filled}{'.' * (WIDTH - filled)}] {fraction:6.1%}"
            f"  {done}/{total} events  {rate:,.0f}/s"
        )
        self._stream.flush()
        self._drawn = True

    def close(self) -> None:
        """End the bar's line, if one was drawn."""
        if self._drawn:
            self._stream.write("\n")
            self._stream.flush()
