"""Configured aiokafka producers and consumers: lavalog's delivery choices in one place.

Producers wait for all in-sync replicas and batch (`linger_ms`); keys are job keys, so
aiokafka's default partitioner (murmur2, as Java's; `partitioner` keeps each key's
hash) puts every fact about a job on one partition. Consumers commit by hand, after
their effects are durable (at-least-once), and start from the beginning of a partition
that has no committed offset. Group members carry the process's identity
(`KafkaSettings.group_instance_id`) and, when started, first remove the member a killed
predecessor of that identity left behind.
"""

from __future__ import annotations

import asyncio
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

from lavalog.controller.kafka.groups import evict_predecessors, member_client_id
from lavalog.controller.kafka.leaderless import LeaderlessRepair
from lavalog.controller.kafka.partitioner import KeyHashPartitioner
from lavalog.controller.kafka.security import connection_options
from lavalog.controller.kafka.settings import KafkaSettings
from lavalog.controller.kafka.topics import group_name


def create_producer(settings: KafkaSettings, **options: Any) -> AIOKafkaProducer:
    """An unstarted producer; `options` are AIOKafkaProducer arguments that add to or
    override the settings' (e.g. `transactional_id` on Apache Kafka).
    """
    configured: dict[str, Any] = connection_options(settings) | {
        "client_id": settings.client_id,
        "acks": settings.acks,
        "linger_ms": settings.linger_ms,
        "max_batch_size": settings.max_batch_size,
        "enable_idempotence": settings.enable_idempotence,
        "partitioner": KeyHashPartitioner(),
    }
    return AIOKafkaProducer(**(configured | options))


def create_consumer(
    settings: KafkaSettings, *, group_id: str | None, **options: Any
) -> AIOKafkaConsumer:
    """An unstarted consumer with manual commits, for `subscribe` (with a group) or `assign`.

    `options` are AIOKafkaConsumer arguments that add to or override the settings', e.g.
    `max_poll_records`, or `isolation_level="read_committed"` behind transactional writers.
    """
    if group_id is not None:
        return GroupConsumer(settings, group_id=group_name(settings, group_id), **options)
    return AIOKafkaConsumer(**(_consumer_options(settings, group_id=None) | options))


class GroupConsumer(AIOKafkaConsumer):  # type: ignore[misc]
    """A group member named after this process, which takes the place of a killed
    predecessor of the same name on `start` (controller/kafka/groups.py), and which
    gets a group going again whose rebalance waits for a leader that has left
    (controller/kafka/leaderless.py)."""

    def __init__(self, settings: KafkaSettings, *, group_id: str, **options: Any) -> None:
        configured = _consumer_options(settings, group_id=group_id)
        if settings.static_membership and settings.group_instance_id:
            configured["group_instance_id"] = settings.group_instance_id
        super().__init__(**(configured | options))
        self._lavalog_settings = settings
        self._lavalog_group = group_id
        self._lavalog_repair: asyncio.Task[None] | None = None

    async def start(self) -> None:
        await evict_predecessors(self._lavalog_settings, self._lavalog_group)
        # Before joining: a consumer subscribed before `start` waits in it until the group
        # gives it partitions, which a group waiting for a departed leader never does.
        repair = LeaderlessRepair(self, self._lavalog_settings, self._lavalog_group)
        self._lavalog_repair = asyncio.create_task(
            repair.run(), name=f"leaderless-{self._lavalog_group}"
        )
        try:
            await super().start()
        except BaseException:
            await self._stop_repair()
            raise

    async def stop(self) -> None:
        await self._stop_repair()
        await super().stop()

    async def _stop_repair(self) -> None:
        if self._lavalog_repair is not None:
            self._lavalog_repair.cancel()
            await asyncio.gather(self._lavalog_repair, return_exceptions=True)
            self._lavalog_repair = None


def _consumer_options(settings: KafkaSettings, *, group_id: str | None) -> dict[str, Any]:
    return connection_options(settings) | {
        "client_id": settings.client_id if group_id is None else member_client_id(settings),
        "group_id": group_id,
        "enable_auto_commit": False,
        "auto_offset_reset": "earliest",
        "session_timeout_ms": settings.session_timeout_ms,
        "heartbeat_interval_ms": settings.heartbeat_interval_ms,
        "fetch_max_wait_ms": settings.fetch_max_wait_ms,
    }
