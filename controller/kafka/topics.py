"""lavalog's topics on a broker: their names under a prefix, and creating them.

The partition counts and the compaction of `lavalog.state` and `lavalog.actuated` come
from `KafkaSettings`, so the development broker, the tests and a production cluster get
the same layout.
"""

from __future__ import annotations

import structlog
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import TopicAlreadyExistsError, for_code

from lavalog.controller.kafka.security import connection_options
from lavalog.controller.kafka.settings import KafkaSettings
from lavalog.events import topics

log = structlog.get_logger("lavalog.kafka")


def topic_name(settings: KafkaSettings, base: str) -> str:
    """The broker-side name of one of `lavalog.events.topics`' topics, e.g. `OBSERVED`."""
    if base not in topics.ALL_TOPICS:
        raise ValueError(f"{base!r} is not a lavalog topic; expected one of {topics.ALL_TOPICS}")
    return settings.topic_prefix + base


def group_name(settings: KafkaSettings, base: str) -> str:
    """The broker-side name of a consumer group, e.g. `lavalog-decider`: prefixed as the
    topics are, so that two installations (or test runs) sharing a broker never share a
    group, whose rebalances would wait for each other's members."""
    return settings.topic_prefix + base


def partitions(settings: KafkaSettings, base: str) -> int:
    """How many partitions one of lavalog's topics is created with."""
    counts = {
        topics.OBSERVED: settings.observed_partitions,
        topics.DECISIONS: settings.decisions_partitions,
        topics.STATE: settings.state_partitions,
        topics.DEADLETTER: settings.deadletter_partitions,
        topics.ACTUATED: settings.decisions_partitions,  # one per decisions partition
    }
    if base not in counts:
        raise ValueError(f"{base!r} is not a lavalog topic; expected one of {topics.ALL_TOPICS}")
    return counts[base]


def topic_specs(settings: KafkaSettings) -> list[NewTopic]:
    """Every lavalog topic as the broker should hold it."""
    return [
        NewTopic(
            topic_name(settings, base),
            num_partitions=partitions(settings, base),
            replication_factor=settings.replication_factor,
            # Snapshots, progress: only the latest per partition key matters.
            topic_configs={"cleanup.policy": "compact"} if base in topics.COMPACTED else {},
        )
        for base in topics.ALL_TOPICS
    ]


async def ensure_topics(settings: KafkaSettings) -> list[str]:
    """Create the lavalog topics that do not exist yet; the names it created.

    Idempotent, and safe when several processes race to create the same topics. An
    existing topic is left as it is, even if its partition count differs (partitions can
    only grow, and growing moves keys): that is logged, with both counts.
    """
    admin = AIOKafkaAdminClient(**connection_options(settings), client_id=settings.client_id)
    await admin.start()
    try:
        existing = set(await admin.list_topics())
        specs = topic_specs(settings)
        present = {spec.name: spec.num_partitions for spec in specs if spec.name in existing}
        if present:
            for topic in await admin.describe_topics(list(present)):
                if len(topic["partitions"]) != present[topic["topic"]]:
                    log.warning(
                        "topic has another partition count than configured",
                        topic=topic["topic"],
                        partitions=len(topic["partitions"]),
                        configured=present[topic["topic"]],
                    )
        missing = [spec for spec in specs if spec.name not in existing]
        if not missing:
            return []
        response = await admin.create_topics(missing)
    finally:
        await admin.close()
    created = []
    for topic, code, *detail in response.topic_errors:
        error = for_code(code)
        if code == 0:
            created.append(topic)
        elif error is not TopicAlreadyExistsError:  # already exists: a concurrent creator won
            raise error(f"cannot create topic {topic!r}: {detail[0] if detail else ''}")
    return created
