"""The projections fed from the development broker: resume from stored positions, rebuild."""

from __future__ import annotations

import asyncio
import dataclasses
import uuid

import pytest

from lavalog.controller.kafka import (
    KafkaSettings,
    create_consumer,
    create_producer,
    partitions,
    topic_name,
)
from lavalog.controller.kafka.reading import partitions_of
from lavalog.events.codec import LogEvent, encode
from lavalog.events.observations import Observation
from lavalog.events.topics import DECISIONS, OBSERVED
from lavalog.projections.service.runner import COMMIT_INTERVAL, Runner
from lavalog.projections.service.sources.kafka import KafkaSource, fetch_wait_ms
from lavalog.projections.service.store.writer import Store
from tests.projections.helpers import decided_examples, event_count, snapshot

pytestmark = [pytest.mark.integration, pytest.mark.timeout(90)]


async def produce(settings: KafkaSettings, events: list[LogEvent]) -> None:
    async with create_producer(settings) as producer:
        sent = [
            await producer.send(
                topic_name(settings, OBSERVED if isinstance(e, Observation) else DECISIONS),
                encode(e),
                key=e.key.encode(),
            )
            for e in events
        ]
        await asyncio.gather(*sent)


def stored(store: Store) -> int:
    return event_count(store.location)


async def run_until_caught_up(store: Store, source: KafkaSource, expected: int) -> None:
    runner = Runner(store, source)
    task = asyncio.create_task(runner.run())
    try:
        while not (runner.ready and stored(store) >= expected):
            assert not task.done(), runner.error
            await asyncio.sleep(0.1)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_incremental_with_a_restart_equals_a_rebuild(kafka_settings, new_store):
    events = decided_examples()
    half = len(events) // 2
    group = f"projections-{uuid.uuid4().hex[:6]}"
    incremental = Store(new_store("incremental"))

    await produce(kafka_settings, events[:half])
    await run_until_caught_up(incremental, KafkaSource(kafka_settings, group_id=group), half)
    await produce(kafka_settings, events[half:] + events[:10])  # a redelivered tail too
    await run_until_caught_up(incremental, KafkaSource(kafka_settings, group_id=group), len(events))

    rebuilt = Store(new_store("rebuilt"))
    source = KafkaSource(kafka_settings, group_id=None, until_end=True)
    await Runner(rebuilt, source).run()
    assert (source.consumed, source.total) == (len(events) + 10, len(events) + 10)
    assert stored(rebuilt) == len(events)
    assert snapshot(rebuilt.location) == snapshot(incremental.location)
    topics = {topic_name(kafka_settings, OBSERVED), topic_name(kafka_settings, DECISIONS)}
    assert {topic for topic in topics if incremental.positions(topic)} == topics
    assert sum(sum(incremental.positions(t).values()) for t in topics) == len(events) + 10


async def test_the_topics_it_subscribes_to_get_lavalog_s_partitions_not_the_broker_s(
    kafka_settings: KafkaSettings, new_store
) -> None:
    """Started before the controller, the projections subscribed first, and the broker
    created the topics with its own default (tansu 4 partitions, Apache Kafka 1): the
    controller then read partitions that did not exist and never became ready."""
    fresh = dataclasses.replace(kafka_settings, topic_prefix=f"fresh-{uuid.uuid4().hex[:8]}.")
    source = KafkaSource(fresh, group_id=f"projections-{uuid.uuid4().hex[:8]}")
    await run_until_caught_up(Store(new_store("s")), source, 0)
    reader = create_consumer(fresh, group_id=None)
    async with reader:
        for topic in (OBSERVED, DECISIONS):
            found = await partitions_of(reader, topic_name(fresh, topic))
            assert len(found) == partitions(fresh, topic), topic


def test_the_service_fetches_as_often_as_it_commits_a_rebuild_as_fast_as_it_can():
    """tansu answers a fetch when its wait runs out: the service's group waits the commit
    interval (it takes records no more often), a rebuild the settings' wait."""
    settings = KafkaSettings()
    assert fetch_wait_ms(settings, grouped=False) == settings.fetch_max_wait_ms < 200
    assert fetch_wait_ms(settings, grouped=True) == COMMIT_INTERVAL * 1000
    slower = dataclasses.replace(settings, fetch_max_wait_ms=500)
    assert fetch_wait_ms(slower, grouped=True) == 500
