"""A one-line progress bar on stderr, for `lavalog projections rebuild`."""

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

    def update(self, done: int, total: int, *, force: bool = False) -> None:
        """Redraw at most ten times a second (always when `force`)."""
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

    def close(self) -> None:
        self._stream.write("\n")
        self._stream.flush()
