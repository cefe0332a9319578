"""Per-job lanes: each job's items in order, jobs in parallel, drains that give up in time."""

from __future__ import annotations

import asyncio
import random

from lavalog.controller.actuator.service.queues import KeyedQueues


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
