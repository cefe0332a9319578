"""Records this process produced, handed to this process's consumer of their partition as
soon as the broker has acknowledged them, instead of at that consumer's next fetch.

Why: the hot path of a failure (the pod's change observed -> the decision -> the API
calls) crosses Kafka twice, and a consumer receives a record only with its next fetch:
on tansu, which answers a fetch that found nothing only when its `fetch_max_wait_ms` runs
out, that is up to the whole wait per hop, however soon the record was written. When the
watchers, the decider and the actuator run in one process (`lavalog run`'s default), the
record is right here once its delivery is acknowledged.

Why it changes nothing else: a record is handed over only once acknowledged with
acks=all, so it is what a fetch of its offset returns (`LocalDelivery.for_settings`);
a consumer takes records only from the offset it expects next, one after the other, so
it decides and carries out its partition in log order exactly as before; a record it
cannot take so (another producer's record comes first, the consumer is behind, the
partition is another member's) is left to the fetch. The fetch later hands out the copies
taken here again, which the consumer skips by offset, as it skips any record handed out
again. Nothing is lost when a held record is dropped: the fetch brings it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from typing import Any

from aiokafka import AIOKafkaConsumer
from aiokafka.structs import ConsumerRecord, TopicPartition

from lavalog.controller.kafka.settings import KafkaSettings

#: records held per partition for a consumer that is not at their offset yet (one behind
#: its fetches, at a start): past this many they are dropped and its fetches bring them
#: (a consumer that far behind gains nothing from them, and a burst of observations would
#: otherwise hold megabytes)
MAX_HELD = 1_000


class LocalFeed:
    """The records of one topic delivered in this process, for one consumer: held per
    partition until it takes them (`take`), only for the partitions it owns (`owns`)."""

    def __init__(self, topic: str, owns: Callable[[int], bool], *, limit: int = MAX_HELD) -> None:
        self.topic = topic
        self._owns = owns
        self._limit = limit
        self._held: dict[int, dict[int, ConsumerRecord[bytes, bytes]]] = {}
        #: records arrived since the consumer last looked (`arrived`)
        self._new = False
        self._waiter: asyncio.Future[None] | None = None

    def owns(self, partition: int) -> bool:
        """Whether the consumer owns `partition`: only its records are held."""
        return self._owns(partition)

    def put(self, record: ConsumerRecord[bytes, bytes]) -> None:
        """Hold a record of a partition the consumer `owns`."""
        held = self._held.setdefault(record.partition, {})
        if len(held) >= self._limit:
            held.clear()  # the consumer is far behind: its fetches bring these
        held[record.offset] = record
        self._new = True
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    def arrived(self) -> asyncio.Future[None]:
        """Done once a record has arrived since the last call (at once if one has)."""
        waiter = asyncio.get_running_loop().create_future()
        if self._new:
            waiter.set_result(None)
        self._new = False
        self._waiter = waiter
        return waiter

    def partitions(self) -> list[int]:
        """The partitions with records held."""
        return [number for number, held in self._held.items() if held]

    def take(self, partition: int, offset: int) -> list[ConsumerRecord[bytes, bytes]]:
        """The records held from `offset` on, one after the other, no longer held; those
        before `offset` are dropped (the consumer has them). Empty when the record at
        `offset` is not held: it comes from elsewhere, and the fetch brings it."""
        held = self._held.get(partition)
        if not held:
            return []
        taken = []
        while (record := held.pop(offset, None)) is not None:
            taken.append(record)
            offset += 1
        for stale in [number for number in held if number < offset]:
            del held[stale]
        return taken


class LocalDelivery:
    """Where the producers of this process report delivered records and its consumers
    subscribe to them, by topic."""

    def __init__(self) -> None:
        self._feeds: dict[str, list[LocalFeed]] = {}

    @classmethod
    def for_settings(cls, settings: KafkaSettings) -> LocalDelivery | None:
        """One for producers acknowledged by every in-sync replica (acks=all); None
        otherwise: a record acknowledged by the leader alone may not be readable yet, and
        can be lost with it, so it must not be acted on before a fetch returns it."""
        return cls() if settings.acks == "all" else None

    def subscribe(
        self, topic: str, owns: Callable[[int], bool], *, limit: int = MAX_HELD
    ) -> LocalFeed:
        """A feed of `topic`'s records for one consumer, of the partitions it `owns`."""
        feed = LocalFeed(topic, owns, limit=limit)
        self._feeds.setdefault(topic, []).append(feed)
        return feed

    def delivered(
        self, topic: str, partition: int, offset: int, records: Iterable[tuple[bytes | None, bytes]]
    ) -> None:
        """`records` (key, value) were acknowledged at `offset` on and after, in order."""
        # Not one record made for a partition no consumer here owns: with several
        # replicas, most of the leader's observations are for another replica's decider.
        feeds = [feed for feed in self._feeds.get(topic, ()) if feed.owns(partition)]
        if not feeds:
            return
        for number, (key, value) in enumerate(records, start=offset):
            record = ConsumerRecord(
                topic=topic,
                partition=partition,
                offset=number,
                timestamp=-1,
                timestamp_type=0,
                key=key,
                value=value,
                checksum=None,
                serialized_key_size=-1 if key is None else len(key),
                serialized_value_size=len(value),
                headers=(),
            )
            for feed in feeds:
                feed.put(record)


class Arrivals:
    """A consumer's next records: what its fetch brings, or, when records delivered in
    this process arrive first, nothing yet (the consumer then takes them from `feed`).
    A fetch still under way is kept for the next call, not cut short."""

    def __init__(self, consumer: AIOKafkaConsumer, feed: LocalFeed | None, **fetch: Any) -> None:
        self._consumer = consumer
        self._feed = feed
        self._options = fetch
        self._fetch: asyncio.Task[dict[TopicPartition, list[Any]]] | None = None

    async def next(self) -> dict[TopicPartition, list[Any]]:
        """What the fetch brought; {} when it found nothing or the feed's records came first."""
        if self._feed is None:
            fetched: dict[TopicPartition, list[Any]] = await self._consumer.getmany(**self._options)
            return fetched
        if self._fetch is None:
            self._fetch = asyncio.ensure_future(self._consumer.getmany(**self._options))
        await asyncio.wait((self._fetch, self._feed.arrived()), return_when=asyncio.FIRST_COMPLETED)
        fetch = self._fetch
        if not fetch.done():
            return {}
        self._fetch = None
        return fetch.result()

    async def close(self) -> None:
        """Stop the fetch under way, if any (before the consumer stops)."""
        fetch, self._fetch = self._fetch, None
        if fetch is not None:
            fetch.cancel()
            await asyncio.gather(fetch, return_exceptions=True)
