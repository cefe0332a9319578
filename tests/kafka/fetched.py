"""Waiting for a consumer's fetches to have handed out everything on its partitions, for
tests of what must not be done twice when they do."""

from __future__ import annotations

import asyncio

from aiokafka import AIOKafkaConsumer


async def until_fetched(consumer: AIOKafkaConsumer, within: float = 30.0) -> None:
    """Until the consumer's position reaches the end of each partition it is assigned
    (as the end was when called)."""
    ends = await consumer.end_offsets(list(consumer.assignment()))
    async with asyncio.timeout(within):
        for partition, end in ends.items():
            while await consumer.position(partition) < end:  # noqa: ASYNC110 (nothing to wait on)
                await asyncio.sleep(0.05)
