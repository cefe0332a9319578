"""The decider service decides a partition's observations one after the other.

Found in the chaos run: one observation was decided twice, differently, by two
deciders; the first had a state that lacked observations. A consumer can hand out a
partition's messages from another position than the one the service resumed from
(seen for the actuator: resumed at 1315, handed 1507 first).
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from aiokafka import TopicPartition

from lavalog.controller.decider.service.runner import DeciderService
from lavalog.controller.kafka import KafkaSettings

TP = TopicPartition("lavalog.observed", 0)


class RecordingConsumer:
    def __init__(self) -> None:
        self.seeks: list[tuple[TopicPartition, int]] = []

    def seek(self, tp: TopicPartition, offset: int) -> None:
        self.seeks.append((tp, offset))


def messages(*offsets: int) -> list[Any]:
    return [SimpleNamespace(offset=offset) for offset in offsets]


def service_at(position: int) -> DeciderService:
    service = DeciderService(kafka=KafkaSettings())
    service._positions[TP.partition] = position
    return service


def test_messages_from_the_next_offset_are_decided() -> None:
    consumer = RecordingConsumer()
    fresh = service_at(10)._in_order(consumer, TP, messages(10, 11, 12))
    assert [m.offset for m in fresh] == [10, 11, 12]
    assert consumer.seeks == []


def test_messages_handed_out_again_are_not_decided_twice() -> None:
    consumer = RecordingConsumer()
    fresh = service_at(10)._in_order(consumer, TP, messages(8, 9, 10))
    assert [m.offset for m in fresh] == [10]
    assert consumer.seeks == []


def test_a_fetch_past_the_next_offset_is_sent_back_and_decides_nothing() -> None:
    consumer = RecordingConsumer()
    fresh = service_at(10)._in_order(consumer, TP, messages(14, 15))
    assert fresh == []
    assert consumer.seeks == [(TP, 10)]
