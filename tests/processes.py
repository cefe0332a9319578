"""Asking the operating system about a process a test started."""

from __future__ import annotations

import os


def alive(pid: int) -> bool:
    """Whether a process with `pid` exists (a zombie not yet reaped counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
