"""RefusalPublisher against the development broker: a refused create reaches the decider
of this process as soon as the broker has it, as the record a fetch returns."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from lavalog.controller.actuator.service.refusals import RefusalPublisher
from lavalog.controller.kafka import KafkaSettings, create_consumer, topic_name
from lavalog.controller.kafka.local_delivery import LocalDelivery
from lavalog.events.observations import CreateFailed
from lavalog.events.topics import OBSERVED

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]


async def test_a_refusal_is_handed_to_this_processs_decider_once_published(
    kafka_settings: KafkaSettings,
) -> None:
    fact = CreateFailed(
        id="default/quota#0/refused",
        key="default/quota",
        job_uid="uid-1",
        time=time.time(),
        decision="default/quota#0",
        object_kind="Pod",
        names=("quota-w-0",),
        code=403,
        reason="Forbidden",
        message="exceeded quota",
    )
    topic = topic_name(kafka_settings, OBSERVED)
    local = LocalDelivery()
    feed = local.subscribe(topic, lambda _: True)
    publisher = RefusalPublisher(kafka_settings, local=local)
    await publisher.start()
    try:
        await publisher.publish(fact)
    finally:
        await publisher.stop()

    (partition,) = feed.partitions()
    consumer = create_consumer(kafka_settings, group_id=None)
    await consumer.start()
    try:
        consumer.subscribe([topic])
        async with asyncio.timeout(30):
            fetched: list[Any] = []
            while not fetched:
                batches = await consumer.getmany(timeout_ms=200)
                fetched = [m for ms in batches.values() for m in ms]
    finally:
        await consumer.stop()
    (record,) = fetched
    (held,) = feed.take(partition, record.offset)
    assert (held.partition, held.offset, held.key, held.value) == (
        record.partition,
        record.offset,
        record.key,
        record.value,
    )
