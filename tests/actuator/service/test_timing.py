"""Where a decision's time went: the parts its `carried out` line gives, which add up to
its lag but for the calls themselves."""

from __future__ import annotations

import asyncio
import time

from lavalog.controller.actuator.service.timing import Timing, Wait, log_fields, timing, waiting
from lavalog.events.decisions import StatusWrite
from tests.actuator.support import decision, status

JOB = {"metadata": {"namespace": "default", "name": "tf", "uid": "uid-1"}}


def test_a_decision_received_again_after_a_handover_counts_the_time_between() -> None:
    """Received 4 s after its cause, left to the next owner at a handover, received again
    6 s later (the same process got the partition back), carried out 2 s after that."""
    write = decision(StatusWrite, JOB, status=status("Running", 1))
    spent = Timing(received=write.time + 10.0, first_received=write.time + 4.0)
    spent.started = write.time + 12.0
    fields = spent.fields(write)
    assert (fields["received"], fields["handover"], fields["queued"]) == (4.0, 6.0, 2.0)
    assert Timing(received=write.time + 1.0).fields(write)["handover"] == 0.0


async def test_waits_of_calls_made_together_count_once() -> None:
    spent = Timing(received=0.0)

    async def wait(seconds: float) -> None:
        with waiting(Wait.LIMITER):
            await asyncio.sleep(seconds)

    write = decision(StatusWrite, JOB, status=status("Running", 1))
    with timing(spent):
        start = time.monotonic()
        await asyncio.gather(wait(0.2), wait(0.2))
        wall = time.monotonic() - start
        # counted once per call, it would be about twice the wall time
        assert 0.2 <= log_fields(write)["limiter"] <= wall + 0.01
    assert log_fields(write) == {}
