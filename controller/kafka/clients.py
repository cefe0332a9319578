"""Configured aiokafka producers and consumers: lavalog's delivery choices in one place.

Producers wait for all in-sync replicas and batch (`linger_ms`); keys are job keys, so
aiokafka's default partitioner (murmur2, as Java's) puts every fact about a job on one
partition. Consumers commit by hand, after their effects are durable (at-least-once),
and start from the beginning of a partition that has no committed offset.
"""

from __future__ import annotations

from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

from controller.kafka.settings import KafkaSettings


def create_producer(settings: KafkaSettings, **options: Any) -> AIOKafkaProducer:
    """An unstarted producer; `options` are AIOKafkaProducer arguments that add to or
    override the settings' (e.g. `transactional_id` on Apache Kafka).
    """
    configured: dict[str, Any] = {
        "bootstrap_servers": settings.bootstrap_servers,
        "client_id": settings.client_id,
        "acks": settings.acks,
        "linger_ms": settings.linger_ms,
        "max_batch_size": settings.max_batch_size,
        "enable_idempotence": settings.enable_idempotence,
    }
    return AIOKafkaProducer(**(configured | options))


def create_consumer(
    settings: KafkaSettings, *, group_id: str | None, **options: Any
) -> AIOKafkaConsumer:
    """An unstarted consumer with manual commits, for `subscribe` (with a group) or `assign`.

    `options` are AIOKafkaConsumer arguments that add to or override the settings', e.g.
    `max_poll_records`, or `isolation_level="read_committed"` behind transactional writers.
    """
    configured: dict[str, Any] = {
        "bootstrap_servers": settings.bootstrap_servers,
        "client_id": settings.client_id,
        "group_id": group_id,
        "enable_auto_commit": False,
        "auto_offset_reset": "earliest",
        "session_timeout_ms": settings.session_timeout_ms,
        "heartbeat_interval_ms": settings.heartbeat_interval_ms,
        "fetch_max_wait_ms": settings.fetch_max_wait_ms,
    }
    return AIOKafkaConsumer(**(configured | options))
