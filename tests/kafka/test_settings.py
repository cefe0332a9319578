"""`KafkaSettings` from `LAVALOG_*` variables, and the values it refuses."""

from __future__ import annotations

import pytest

from lavalog.controller.kafka import KafkaSettings


def test_defaults_suit_the_development_broker() -> None:
    settings = KafkaSettings.from_env({})
    assert settings == KafkaSettings()
    assert settings.acks == "all"
    assert not settings.enable_idempotence
    assert (settings.observed_partitions, settings.state_partitions) == (12, 12)
    assert settings.deadletter_partitions == 1


def test_every_field_reads_its_variable() -> None:
    settings = KafkaSettings.from_env(
        {
            "LAVALOG_BOOTSTRAP_SERVERS": "kafka-0:9092,kafka-1:9092",
            "LAVALOG_TOPIC_PREFIX": "staging.",
            "LAVALOG_OBSERVED_PARTITIONS": "48",
            "LAVALOG_REPLICATION_FACTOR": "3",
            "LAVALOG_ACKS": "1",
            "LAVALOG_LINGER_MS": "0",
            "LAVALOG_ENABLE_IDEMPOTENCE": "false",
            "UNRELATED": "x",
        }
    )
    assert settings.bootstrap_servers == "kafka-0:9092,kafka-1:9092"
    assert settings.topic_prefix == "staging."
    assert settings.observed_partitions == 48
    assert settings.replication_factor == 3
    assert settings.acks == 1
    assert settings.linger_ms == 0


def test_idempotence_can_be_turned_on_for_apache_kafka() -> None:
    settings = KafkaSettings.from_env({"LAVALOG_ENABLE_IDEMPOTENCE": "true"})
    assert settings.enable_idempotence


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        pytest.param(
            "LAVALOG_OBSERVED_PARTITIONS", "twelve", "LAVALOG_OBSERVED_PARTITIONS", id="nan"
        ),
        pytest.param("LAVALOG_STATE_PARTITIONS", "0", "at least 1", id="zero-partitions"),
        pytest.param("LAVALOG_ACKS", "2", "expected 0, 1 or all", id="acks"),
        pytest.param("LAVALOG_ENABLE_IDEMPOTENCE", "maybe", "true or false", id="bool"),
        pytest.param("LAVALOG_LINGER_MS", "-1", "negative", id="negative-linger"),
    ],
)
def test_bad_values_are_refused(variable: str, value: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        KafkaSettings.from_env({variable: value})


def test_an_idempotent_producer_needs_acks_all() -> None:
    with pytest.raises(ValueError, match="acks='all'"):
        KafkaSettings(enable_idempotence=True, acks=1)
