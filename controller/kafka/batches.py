"""Keyed records produced one batch per partition instead of one `send` per record.

`AIOKafkaProducer.send` costs a future, a pure-Python murmur2 of the key and an
accumulator append per record: for the decider service, which produces several decisions
per observation, that was ~40% of its time (`bench/pipeline.py` under py-spy). Here
records are appended to one `BatchBuilder` per partition in the order given (so a
partition's records keep their order), and each batch is handed to the producer whole,
with one future for all its records.

With a `LocalDelivery`, each batch's records are handed to this process's consumers of
the topic once the batch is acknowledged (`local_delivery`).

The partition is the one `send` would choose (`partitioner.KeyHashPartitioner`, which
keeps each key's hash: aiokafka's default over the topic's partitions), so a job's
decisions land where its other records do.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable
from typing import Any

from aiokafka import AIOKafkaProducer

from lavalog.controller.kafka.local_delivery import LocalDelivery
from lavalog.controller.kafka.partitioner import KeyHashPartitioner

#: a batch being filled: aiokafka's `BatchBuilder` and its records (key, value), in order
_Open = tuple[Any, list[tuple[bytes, bytes]]]


class PartitionBatches:
    """Records for one topic, gathered per partition until `flush`.

    A batch that fills up is set aside and a new one started; `send_full` sends those
    set aside, `flush` everything. Await every future returned (by `send_full` and
    `flush`) before counting the records as delivered.
    """

    def __init__(
        self, producer: AIOKafkaProducer, topic: str, *, local: LocalDelivery | None = None
    ) -> None:
        self._producer = producer
        self._topic = topic
        self._local = local
        self._partitioner = KeyHashPartitioner()
        self._partitions: list[int] = []
        self._open: dict[int, _Open] = {}
        #: batches that filled up, in the order they did, not sent yet
        self._full: list[tuple[int, _Open]] = []

    async def prepare(self) -> None:
        """Learn the topic's partitions, once: `add` places records by them."""
        if not self._partitions:
            self._partitions = sorted(await self._producer.partitions_for(self._topic))

    def add(self, key: bytes, value: bytes) -> bool:
        """Append one record (after `prepare`); True when it filled a batch, which
        `send_full` then sends. Not a coroutine: most records only join a batch, and
        the decider adds one per decision."""
        assert self._partitions, "prepare() first"
        partition = self._partitioner(key, self._partitions, self._partitions)
        batch = self._open.get(partition)
        if batch is None:
            batch = self._open[partition] = (self._producer.create_batch(), [])
        if batch[0].append(key=key, value=value, timestamp=None) is not None:
            batch[1].append((key, value))
            return False
        # Full: it goes before any later record of its partition, which starts the next
        # (a record larger than an empty batch is refused as `send` would refuse it).
        self._full.append((partition, batch))
        batch = self._open[partition] = (self._producer.create_batch(), [(key, value)])
        if batch[0].append(key=key, value=value, timestamp=None) is None:
            raise ValueError(f"a record of {len(value)} bytes does not fit in a batch")
        return True

    async def send_full(self) -> list[Awaitable[Any]]:
        """Send the batches that filled up; their deliveries."""
        full, self._full = self._full, []
        return [await self._send(partition, batch) for partition, batch in full]

    async def flush(self) -> list[Awaitable[Any]]:
        """Send every batch not yet sent, the full ones first; their deliveries."""
        sent = await self.send_full()
        batches, self._open = self._open, {}
        return sent + [await self._send(partition, batch) for partition, batch in batches.items()]

    async def _send(self, partition: int, batch: _Open) -> Awaitable[Any]:
        builder, records = batch
        builder.close()
        future: asyncio.Future[Any] = await self._producer.send_batch(
            builder, self._topic, partition=partition
        )
        if self._local is not None:
            future.add_done_callback(functools.partial(self._delivered, partition, records))
        return future

    def _delivered(
        self, partition: int, records: list[tuple[bytes, bytes]], sent: asyncio.Future[Any]
    ) -> None:
        if self._local is not None and not sent.cancelled() and sent.exception() is None:
            self._local.delivered(self._topic, partition, sent.result().offset, records)
