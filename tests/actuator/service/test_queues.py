"""Per-job lanes: each job's items in order, jobs in parallel, drains that give up in time."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Sequence

from lavalog.controller.actuator.service.queues import KeyedQueues, aside, step_aside


class Holding:
    """A lane handler that records the items it handles and holds `item` (`started`
    once it is being handled) until `release` is set."""

    def __init__(self, item: str) -> None:
        self.item = item
        self.started = asyncio.Event()
        self.release = asyncio.Event()
        self.handled: list[str] = []

    async def handle(self, item: str, later: object) -> None:
        if item == self.item:
            self.started.set()
            await self.release.wait()
        self.handled.append(item)


async def test_items_of_one_key_run_in_order_and_keys_overlap() -> None:
    seen: dict[str, list[int]] = {}
    running: set[str] = set()
    overlap = 0
    rng = random.Random(3)

    async def handle(item: tuple[str, int], later: object) -> None:
        nonlocal overlap
        key, n = item
        assert key not in running, "two items of one key at once"
        running.add(key)
        overlap = max(overlap, len(running))
        await asyncio.sleep(rng.random() / 1000)
        seen.setdefault(key, []).append(n)
        running.discard(key)

    lanes: KeyedQueues[tuple[str, int]] = KeyedQueues(handle)
    for n in range(20):
        for key in ("a", "b", "c", "d"):
            lanes.put(key, 0, (key, n))
        await asyncio.sleep(0)
    await lanes.drain(grace=10)

    assert seen == {key: list(range(20)) for key in "abcd"}
    assert overlap > 1
    assert len(lanes) == 0


async def test_a_drain_waits_only_for_its_groups_and_cancels_the_late() -> None:
    release = asyncio.Event()
    finished: list[str] = []

    async def handle(key: str, later: object) -> None:
        if key == "stuck":
            await asyncio.Event().wait()
        if key == "slow":
            await release.wait()
        finished.append(key)

    lanes: KeyedQueues[str] = KeyedQueues(handle)
    lanes.put("stuck", "p0", "stuck")
    lanes.put("quick", "p0", "quick")
    lanes.put("slow", "p1", "slow")
    await lanes.drain(grace=0.05, groups={"p0"})

    assert finished == ["quick"]
    assert len(lanes) == 1  # p1's lane is untouched
    release.set()
    await lanes.drain(grace=10)
    assert finished == ["quick", "slow"]


async def test_a_lane_waiting_to_retry_a_call_lets_other_lanes_have_its_turn() -> None:
    """One turn between two jobs: the first job's call fails and waits to be retried
    (`step_aside`); the second job is carried out meanwhile, not after the retry."""
    retried = asyncio.Event()
    order: list[str] = []

    async def handle(key: str, later: object) -> None:
        if key == "failing":
            order.append("failing: waits to retry")
            await step_aside(0.05)
            retried.set()
        order.append(f"{key}: done")

    lanes: KeyedQueues[str] = KeyedQueues(handle, turns=1)
    lanes.put("failing", 0, "failing")
    lanes.put("other", 0, "other")
    await lanes.drain(grace=10)

    assert order == ["failing: waits to retry", "other: done", "failing: done"]
    assert retried.is_set()


async def test_a_lane_cancelled_while_aside_leaves_the_turns_whole() -> None:
    """A lane drained (cancelled) while it waits aside holds no turn: it gives none back
    twice, and the one turn there is goes to the next lane."""
    aside_now = asyncio.Event()
    finished: list[str] = []

    async def handle(key: str, later: object) -> None:
        if key == "aside":
            async with aside():
                aside_now.set()
                await asyncio.Event().wait()
        finished.append(key)

    lanes: KeyedQueues[str] = KeyedQueues(handle, turns=1)
    lanes.put("aside", "p0", "aside")
    await aside_now.wait()
    await lanes.drain(grace=0.01, groups={"p0"})
    lanes.put("next", "p1", "next")
    lanes.put("after", "p1", "after")
    await lanes.drain(grace=5)
    assert finished == ["next", "after"]
    assert lanes._turns._free == 1


async def test_dropping_a_groups_waiting_items_keeps_what_is_under_way() -> None:
    """A handover: the item being handled is finished, those waiting behind it (and in
    lanes waiting for a turn) are left to the next owner; other groups keep theirs."""
    held = Holding("a1")
    lanes: KeyedQueues[str] = KeyedQueues(held.handle, turns=1)
    for item in ("a1", "a2", "a3"):
        lanes.put("a", "p0", item)
    lanes.put("b", "p0", "b1")  # no turn free: b, c, d wait
    lanes.put("c", "p1", "c1")
    lanes.put("d", "p0", "d1")
    await held.started.wait()
    assert sorted(lanes.drop_waiting({"p0"})) == ["a2", "a3", "b1", "d1"]
    held.release.set()
    await lanes.drain(grace=5)
    assert held.handled == ["a1", "c1"]
    assert len(lanes) == 0


async def test_a_held_lane_takes_no_turn_and_wakes_for_the_next_item_or_a_drop() -> None:
    """A lane that holds its item (`hold`) for more to come leaves its turn to others,
    handles both once the next item comes (not at the hold's end), and ends at once when
    its items are dropped (a handover, a stop)."""
    handled: list[str] = []
    done = {"other": asyncio.Event(), "next": asyncio.Event()}

    async def handle(item: str, later: object) -> None:
        handled.append(item)
        if item in done:
            done[item].set()

    def hold(items: object) -> float:
        return 3600.0 if items == ["held"] else 0.0

    lanes: KeyedQueues[str] = KeyedQueues(handle, turns=1, hold=hold)
    lanes.put("a", 0, "held")
    lanes.put("b", 0, "other")
    async with asyncio.timeout(5):
        await done["other"].wait()
        lanes.put("a", 0, "next")
        await done["next"].wait()
        assert handled == ["other", "held", "next"]
        lanes.put("c", 1, "held")
        await asyncio.sleep(0)
        assert lanes.drop_waiting() == ["held"]
        await lanes.drain(grace=3600)
    assert len(lanes) == 0


async def test_a_turn_carries_out_what_its_lane_had_queued_before_other_lanes_go() -> None:
    """One turn between two jobs: the first job's queued items are carried out in its
    turn (as Volcano syncs a job once for all queued about it), so it is done before the
    next job starts, not a step further each round; an item queued during its turn
    waits for the lanes that asked before."""
    handled: list[str] = []

    async def handle(item: str, later: object) -> None:
        handled.append(item)
        if item == "a1":
            lanes.put("a", 0, "a4")
        await asyncio.sleep(0)  # b's lane asks for the turn meanwhile

    lanes: KeyedQueues[str] = KeyedQueues(handle, turns=1)
    for item in ("a1", "a2", "a3"):
        lanes.put("a", 0, item)
    lanes.put("b", 0, "b1")
    await lanes.drain(grace=5)

    assert handled == ["a1", "a2", "a3", "b1", "a4"]


async def test_an_urgent_turn_leaves_the_lanes_other_work_to_wait_as_what_it_is() -> None:
    """A lane that took a turn for its pod work gives it back before its status write,
    which waits behind the other lanes' pod work."""
    handled: list[str] = []

    async def handle(item: str, later: object) -> None:
        handled.append(item)
        await asyncio.sleep(0)  # b's lane asks for the turn meanwhile

    lanes: KeyedQueues[str] = KeyedQueues(
        handle, turns=1, urgent=lambda item: item.startswith("pods")
    )
    lanes.put("a", 0, "pods-a")
    lanes.put("a", 0, "status-a")
    lanes.put("b", 0, "pods-b")
    await lanes.drain(grace=5)

    assert handled == ["pods-a", "pods-b", "status-a"]


async def test_an_item_put_takes_out_the_waiting_one_it_supersedes_never_the_one_handled() -> None:
    """`supersedes` names the item the last one put makes unnecessary: a waiting one
    leaves the lane at once (the caller counts it done); the one being handled stays."""
    held = Holding("w1")

    def supersedes(items: Sequence[str]) -> int | None:
        return len(items) - 2 if len(items) > 1 and items[-1].startswith("w") else None

    lanes: KeyedQueues[str] = KeyedQueues(held.handle, turns=1, supersedes=supersedes)
    assert lanes.put("a", 0, "w1") is None
    await held.started.wait()
    assert lanes.put("a", 0, "w2") is None
    assert lanes.put("a", 0, "w3") == "w2"
    held.release.set()
    await lanes.drain(grace=5)
    assert held.handled == ["w1", "w3"]
