"""The producers' partitioner chooses aiokafka's default partition for every key, hashing a
key seen before no more."""

from __future__ import annotations

import pytest
from aiokafka.partitioner import DefaultPartitioner, murmur2

from lavalog.controller.kafka import partitioner
from lavalog.controller.kafka.clients import create_producer
from lavalog.controller.kafka.partitioner import KeyHashPartitioner
from lavalog.controller.kafka.settings import KafkaSettings


@pytest.mark.parametrize("count", [1, 3, 12, 50])
def test_every_key_goes_where_aiokafkas_default_partitioner_puts_it(count: int) -> None:
    partitions = list(range(count))
    chosen = KeyHashPartitioner(capacity=10)
    keys = [f"ns-{n % 7}/job-{n}".encode() for n in range(200)]
    for key in keys + keys:  # the second time from what was kept (the last 10 only)
        assert chosen(key, partitions, partitions) == DefaultPartitioner()(
            key, partitions, partitions
        )


def test_a_key_is_hashed_once_while_it_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    hashed: list[bytes] = []

    def counted(key: bytes) -> int:
        hashed.append(key)
        value: int = murmur2(key)
        return value

    monkeypatch.setattr(partitioner, "murmur2", counted)
    chosen = KeyHashPartitioner(capacity=2)
    for key in (b"a/1", b"a/1", b"a/2", b"a/1", b"a/3", b"a/1"):
        chosen(key, [0, 1, 2], [0, 1, 2])
    # a/1 kept until a/3 pushed out the key kept longest (a/1 itself)
    assert hashed == [b"a/1", b"a/2", b"a/3", b"a/1"]


def test_a_message_without_a_key_goes_to_an_available_partition() -> None:
    assert KeyHashPartitioner()(None, [0, 1, 2], [2]) == 2


async def test_producers_partition_with_it() -> None:
    producer = create_producer(KafkaSettings(bootstrap_servers="127.0.0.1:1"))
    assert isinstance(producer._partitioner, KeyHashPartitioner)  # never started: no I/O
