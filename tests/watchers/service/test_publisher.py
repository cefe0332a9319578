"""The watchers' publisher against the development broker."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest

from lavalog.controller.kafka import KafkaSettings
from lavalog.controller.watchers.service.publisher import open_publisher
from tests.scenarios import JobScript

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]


async def test_a_batch_is_delivered_without_waiting_for_the_producers_linger(
    kafka_settings: KafkaSettings,
) -> None:
    # publish waits for every batch's delivery before the watch goes on: a producer that
    # lingered would hold each one (a failed pod's replacement with it) that long
    lingering = dataclasses.replace(kafka_settings, linger_ms=30_000)
    batch = JobScript("train").submit().pods("worker", 2, "Pending").events
    async with open_publisher(lingering) as publisher:
        async with asyncio.timeout(10):
            await publisher.publish(batch)
