"""One-line messages for failures a user can fix, shared by the commands that meet them."""

from __future__ import annotations


def kafka_unreachable(bootstrap_servers: str) -> str:
    """What was tried and what to do when no Kafka broker answers."""
    return (
        f"cannot reach Kafka at {bootstrap_servers}: no broker answered; start one (`lavalog "
        "broker` runs a development broker) or say where it is with --bootstrap-servers or "
        "$LAVALOG_BOOTSTRAP_SERVERS"
    )
