"""Topic names under a prefix, and `ensure_topics` creating the configured layout once."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
from structlog.testing import capture_logs

from lavalog.controller.kafka import KafkaSettings, ensure_topics, topic_name
from lavalog.events.topics import ACTUATED, ALL_TOPICS, DEADLETTER, DECISIONS, OBSERVED, STATE


def test_topic_names_carry_the_prefix() -> None:
    settings = KafkaSettings(topic_prefix="t1.")
    assert topic_name(settings, OBSERVED) == "t1.lavalog.observed"
    assert topic_name(KafkaSettings(), STATE) == "lavalog.state"


def test_an_unknown_topic_is_refused() -> None:
    with pytest.raises(ValueError, match="not a lavalog topic"):
        topic_name(KafkaSettings(), "lavalog.observd")


@pytest.mark.integration
async def test_ensure_topics_creates_the_configured_layout_once(kafka_broker: str) -> None:
    settings = KafkaSettings(
        bootstrap_servers=kafka_broker,
        topic_prefix="ensure-once.",
        observed_partitions=6,
        decisions_partitions=4,
        state_partitions=6,
    )
    names = [topic_name(settings, base) for base in ALL_TOPICS]
    assert sorted(await ensure_topics(settings)) == sorted(names)
    assert await ensure_topics(settings) == []
    # A different layout does not touch topics that exist, and says so.
    with capture_logs() as logs:
        assert await ensure_topics(dataclasses.replace(settings, observed_partitions=12)) == []
    assert [
        (entry["topic"], entry["partitions"], entry["configured"])
        for entry in logs
        if entry["event"] == "topic has another partition count than configured"
    ] == [(topic_name(settings, OBSERVED), 6, 12)]

    admin = AIOKafkaAdminClient(bootstrap_servers=kafka_broker)
    await admin.start()
    try:
        described = await admin.describe_topics(names)
        configs = await admin.describe_configs(
            [
                ConfigResource(ConfigResourceType.TOPIC, topic_name(settings, base))
                for base in (STATE, ACTUATED)
            ]
        )
    finally:
        await admin.close()
    counts = {topic["topic"]: len(topic["partitions"]) for topic in described}
    assert counts == {
        topic_name(settings, OBSERVED): 6,
        topic_name(settings, DECISIONS): 4,
        topic_name(settings, STATE): 6,
        topic_name(settings, DEADLETTER): 1,
        topic_name(settings, ACTUATED): 4,  # one per decisions partition
    }
    for described_config in configs[0].resources:
        entries = {entry[0]: entry[1] for entry in described_config[4]}
        assert entries["cleanup.policy"] == "compact"


@pytest.mark.integration
async def test_concurrent_ensure_topics_all_succeed(kafka_broker: str) -> None:
    settings = KafkaSettings(bootstrap_servers=kafka_broker, topic_prefix="ensure-race.")
    created = await asyncio.gather(*(ensure_topics(settings) for _ in range(4)))
    assert sorted(name for names in created for name in names) == sorted(
        topic_name(settings, base) for base in ALL_TOPICS
    )
