"""One-line messages for failures a user can fix, shared by the commands that meet them."""

from __future__ import annotations

from aiokafka.errors import KafkaConnectionError

from lavalog.controller.kafka.probe import KafkaUnavailable

#: what a command that talks to Kafka catches to say `kafka_failure` and exit 1
KAFKA_FAILURES = (KafkaUnavailable, KafkaConnectionError)


def kafka_failure(error: KafkaUnavailable | KafkaConnectionError, bootstrap_servers: str) -> str:
    """What went wrong with Kafka: the probe's explanation, else that no broker answered."""
    if isinstance(error, KafkaUnavailable):
        return str(error)
    return kafka_unreachable(bootstrap_servers)


def kafka_unreachable(bootstrap_servers: str) -> str:
    """What was tried and what to do when no Kafka broker answers."""
    return (
        f"cannot reach Kafka at {bootstrap_servers}: no broker answered; start one (`lavalog "
        "broker` runs a development broker) or say where it is with --bootstrap-servers or "
        "$LAVALOG_BOOTSTRAP_SERVERS"
    )
