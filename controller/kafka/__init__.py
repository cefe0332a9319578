"""Kafka plumbing shared by every Kafka-facing part of lavalog: settings, topics, clients.

Must not import the components (watchers, decider, actuator), the projections or the
command line: they all build on it.
"""

from lavalog.controller.kafka.clients import create_consumer, create_producer
from lavalog.controller.kafka.settings import KafkaSettings
from lavalog.controller.kafka.topics import ensure_topics, partitions, topic_name, topic_specs

__all__ = [
    "KafkaSettings",
    "create_consumer",
    "create_producer",
    "ensure_topics",
    "partitions",
    "topic_name",
    "topic_specs",
]
