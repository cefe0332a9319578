"""The event loop `lavalog run` runs on: uvloop where it is installed, else asyncio's own.

Every component of a controller shares one loop. uvloop does the loop's own work (ready
callbacks, selector calls, socket reads and writes) in libuv, compiled; the application
code is the same either way, and so is most of the CPU a controller spends (deciding,
encoding, the API client): `bench/reaction.py --arm a:loop=asyncio --arm b:loop=uvloop`
prints both side by side. It is an extra (`pip install 'lavalog[fast]'`, in the image) because it
ships compiled wheels and no Windows build: `auto` uses it when it imports and asyncio's
loop otherwise, and asking for it where it is missing is refused with the way to get it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from enum import StrEnum


class EventLoop(StrEnum):
    AUTO = "auto"
    ASYNCIO = "asyncio"
    UVLOOP = "uvloop"


class EventLoopUnavailable(ValueError):
    """The loop asked for cannot be made here."""


def loop_factory(choice: EventLoop) -> Callable[[], asyncio.AbstractEventLoop] | None:
    """What `asyncio.Runner(loop_factory=...)` makes the loop with; None: asyncio's own."""
    if choice is EventLoop.ASYNCIO:
        return None
    try:
        import uvloop
    except ImportError:
        if choice is EventLoop.UVLOOP:
            raise EventLoopUnavailable(
                "--event-loop uvloop: uvloop is not installed; install it with "
                "pip install 'lavalog[fast]', or choose --event-loop asyncio"
            ) from None
        return None
    factory: Callable[[], asyncio.AbstractEventLoop] = uvloop.new_event_loop
    return factory


def running_loop() -> str:
    """The running loop's library ("uvloop" or "asyncio"), for the log."""
    return type(asyncio.get_running_loop()).__module__.split(".")[0]
