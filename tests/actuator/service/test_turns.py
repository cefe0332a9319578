"""The job lanes' turns: pod work first, and yet status-only lanes get their share."""

from __future__ import annotations

import asyncio

from lavalog.controller.actuator.core.priority import Priority
from lavalog.controller.actuator.service.turns import Turns


async def test_status_lanes_hold_their_share_of_the_turns_while_pod_work_waits() -> None:
    """A burst's creates do not hold every Job's Running write back until they are all
    made: a free turn goes to the kind waiting that holds the fewest for its share (pod
    work 4, status 2: one of three turns for status), each kind in the order it asked."""
    turns = Turns(3)
    for n in range(3):
        assert await turns.take(f"busy-{n}", urgent=True) is Priority.PODS
    granted: list[str] = []

    async def lane(key: str, urgent: bool) -> Priority:
        kind = await turns.take(key, urgent)
        granted.append(key)
        return kind

    waiting = {
        key: asyncio.create_task(lane(key, urgent))
        for key, urgent in [(f"pods-{n}", True) for n in range(3)]
        + [(f"status-{n}", False) for n in range(2)]
    }
    await asyncio.sleep(0)  # all wait

    for _ in range(3):  # the busy lanes are done, one after the other
        turns.give_back(Priority.PODS)
        await asyncio.sleep(0)
    assert granted == ["status-0", "pods-0", "pods-1"]

    turns.give_back(await waiting["status-0"])  # status goes on holding its one turn
    await asyncio.sleep(0)
    assert granted[3:] == ["status-1"]
    for key in ("pods-0", "pods-1", "status-1"):
        turns.give_back(await waiting[key])
    await waiting["pods-2"]
    assert granted[4:] == ["pods-2"]


async def test_a_kind_alone_takes_every_turn_and_a_promoted_lane_holds_it_as_pod_work() -> None:
    turns = Turns(1)
    busy = await turns.take("busy", urgent=False)
    served: list[tuple[str, Priority]] = []

    async def lane(key: str) -> None:
        kind = await turns.take(key, urgent=False)
        served.append((key, kind))
        turns.give_back(kind)

    waiting = [asyncio.create_task(lane(key)) for key in ("a", "b", "c")]
    await asyncio.sleep(0)
    turns.promote("c")  # pod work was put in its lane meanwhile
    turns.give_back(busy)
    await asyncio.gather(*waiting)

    assert served == [("c", Priority.PODS), ("a", Priority.STATUS), ("b", Priority.STATUS)]
    assert turns._free == 1


async def test_a_lane_would_wait_while_every_turn_is_taken() -> None:
    """What tells the status hold that the actuator is behind."""
    turns = Turns(2)
    assert not turns.would_wait()
    first = await turns.take("a", urgent=True)
    assert not turns.would_wait()
    second = await turns.take("b", urgent=False)
    assert turns.would_wait()
    waiter = asyncio.create_task(turns.take("c", urgent=False))
    await asyncio.sleep(0)
    turns.give_back(first)  # straight to the lane waiting
    assert turns.would_wait()
    turns.give_back(second)
    assert not turns.would_wait()
    turns.give_back(await waiter)
    assert not turns.would_wait()
