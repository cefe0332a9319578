"""Kafka topic names and partition keys: the addresses of the public contract."""

from __future__ import annotations

OBSERVED = "lavalog.observed"
DECISIONS = "lavalog.decisions"
STATE = "lavalog.state"
DEADLETTER = "lavalog.deadletter"
#: the actuator's progress past its committed offsets (compacted; see docs/actuator.md)
ACTUATED = "lavalog.actuated"

ALL_TOPICS = (OBSERVED, DECISIONS, STATE, DEADLETTER, ACTUATED)
#: topics where only the last record per key matters
COMPACTED = (STATE, ACTUATED)


def job_key(namespace: str, name: str) -> str:
    """The partition key of everything about one job: all its facts land on one partition."""
    return f"{namespace}/{name}"


def split_job_key(key: str) -> tuple[str, str]:
    """(namespace, name) of a job key; ValueError when it is not `namespace/name`."""
    namespace, sep, name = key.partition("/")
    if not sep or not namespace or not name or "/" in name:
        raise ValueError(f"a job is named NAMESPACE/NAME, not {key!r}")
    return namespace, name
