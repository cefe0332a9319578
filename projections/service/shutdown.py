"""Stopping a service on SIGTERM or SIGINT by cancelling it, so that its cleanup runs.

Kubernetes stops a pod with SIGTERM and a terminal with Ctrl-C (SIGINT). Left to their
defaults the first kills the process mid-batch and the second surfaces as a
KeyboardInterrupt wherever the loop happens to be; turned into a cancellation of the
service, both let it finish its batch, stop serving and close its store.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Coroutine
from typing import Any

SIGNALS = (signal.SIGTERM, signal.SIGINT)


async def until_signalled(service: Coroutine[Any, Any, None]) -> bool:
    """Run `service` until it returns or a stop signal arrives; True if it was signalled.

    The first signal cancels the service and waits for its cleanup; later ones are
    ignored, so an impatient second Ctrl-C cannot cut a batch short (SIGKILL still can).
    """
    loop = asyncio.get_running_loop()
    task = asyncio.ensure_future(service)
    signalled = False

    def stop() -> None:
        nonlocal signalled
        if not signalled:
            signalled = True
            task.cancel()

    for number in SIGNALS:
        loop.add_signal_handler(number, stop)
    try:
        await task
    except asyncio.CancelledError:
        if not signalled:
            raise
    finally:
        for number in SIGNALS:
            loop.remove_signal_handler(number)
    return signalled
