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

#: the bytes a fed consumer's fetch waits for (`FetchPace`): more than its wait brings at
#: the rates a controller sees, so that the broker answers it when the wait runs out
#: rather than as soon as it finds a copy (tansu and Apache Kafka alike)
FED_MIN_BYTES = 1024 * 1024

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
        #: records the consumer took here, all partitions (`FetchPace`: is it fed here?)
        self.taken = 0
        #: the last offset taken, by partition: a fetched record past it was not taken here
        self._taken_through: dict[int, int] = {}
        #: a record the consumer waits for is not held (another producer's, or dropped):
        #: only a fetch brings it (`FetchPace` then fetches at the short wait again)
        self.gap = False

    def owns(self, partition: int) -> bool:
        """Whether the consumer owns `partition`: only its records are held."""
        return self._owns(partition)

    def put(self, record: ConsumerRecord[bytes, bytes]) -> None:
        """Hold a record of a partition the consumer `owns`."""
        held = self._held.setdefault(record.partition, {})
        if len(held) >= self._limit:
            held.clear()  # the consumer is far behind: its fetches bring these
            self.gap = True
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
        if taken:
            self.taken += len(taken)
            self._taken_through[partition] = offset - 1
        if held:  # records past one that is not held: they wait for its fetch
            self.gap = True
        return taken

    def taken_through(self, partition: int) -> int:
        """The last offset of `partition` the consumer took here; -1 before any."""
        return self._taken_through.get(partition, -1)


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


class FetchPace:
    """How long a consumer's fetches wait on the broker: `local_ms` while this process
    hands it every record it takes, `short_ms` otherwise.

    Why: a consumer fed here still fetches, for what only a fetch brings (another
    producer's record, one dropped), and its fetches bring copies of what it took here,
    or nothing. The broker answers a fetch as soon as it finds a record (or when the wait
    runs out), and on tansu each fetch walks every partition's batches, so a busy
    consumer's copies cost the broker more CPU than anything else a controller asks of
    it. Fed here, a consumer loses nothing by fetching less often: what it takes does
    not wait for a fetch. So its fetches also ask for `FED_MIN_BYTES`, which makes the
    broker hold each one for the whole wait: one fetch per wait, whatever the rate.

    Fed means: the consumer takes records here, its fetches bring none it did not take
    here, and no record it waits for is missing from the feed (`gap`). A consumer that
    takes nothing here (a follower, whose watchers do not lead) fetches at the short
    wait; so does one that waits for a record only a fetch brings (another producer's, or
    one the feed dropped), from its next fetch on, until its fetches bring only copies
    again. An idle consumer fed here keeps the long wait: a Command (another producer's)
    then reaches it within the long wait (tansu reads the partitions again as the wait
    runs out; Apache Kafka answers a waiting fetch as soon as records arrive).
    """

    def __init__(
        self, consumer: AIOKafkaConsumer, feed: LocalFeed, *, short_ms: int, local_ms: int
    ) -> None:
        self._fetcher = _fetcher_of(consumer)
        self._feed = feed
        self._short_ms = short_ms
        self._local_ms = local_ms
        self._min_bytes: int = self._fetcher._fetch_min_bytes
        self._set(fed=False)

    @property
    def wait_ms(self) -> int:
        """The wait the consumer's next fetch asks for."""
        wait: int = self._fetcher._fetch_max_wait_ms
        return wait

    def fetched(self, batches: dict[TopicPartition, list[Any]]) -> None:
        """Set the next fetch's wait, by what this one brought. Called as the records are
        handed out, before the consumer's task yields: aiokafka's fetcher builds its next
        request when it runs next, and reads the wait then."""
        feed = self._feed
        fed = (
            feed.taken > 0
            and not feed.gap
            and all(
                records[-1].offset <= feed.taken_through(tp.partition)
                for tp, records in batches.items()
                if records
            )
        )
        feed.gap = False  # taken again from the feed, a gap still there sets it anew
        self._set(fed=fed)

    def check_gap(self) -> None:
        """The short wait from the next fetch on, if the consumer waits for a record only a
        fetch brings."""
        if self._feed.gap:
            self._set(fed=False)

    def _set(self, *, fed: bool) -> None:
        fetcher = self._fetcher
        fetcher._fetch_max_wait_ms = self._local_ms if fed else self._short_ms
        fetcher._fetch_min_bytes = FED_MIN_BYTES if fed else self._min_bytes


def _fetcher_of(consumer: AIOKafkaConsumer) -> Any:
    """The started consumer's fetcher, whose wait and least bytes `FetchPace` sets
    (aiokafka has no public way to change them on a running consumer; it reads the
    attributes for each request)."""
    fetcher = getattr(consumer, "_fetcher", None)
    wanted = ("_fetch_max_wait_ms", "_fetch_min_bytes")
    if fetcher is None or not all(hasattr(fetcher, name) for name in wanted):
        raise RuntimeError(
            "this aiokafka's consumer keeps its fetch wait elsewhere than `_fetcher."
            "_fetch_max_wait_ms`/`_fetch_min_bytes` (or it was not started): FetchPace "
            "cannot set it"
        )
    return fetcher


class Arrivals:
    """A consumer's next records: what its fetch brings, or, when records delivered in
    this process arrive first, nothing yet (the consumer then takes them from `feed`).
    A fetch still under way is kept for the next call, not cut short. With a feed, the
    wait of the consumer's fetches follows where its records come from (`FetchPace`)."""

    def __init__(
        self,
        consumer: AIOKafkaConsumer,
        feed: LocalFeed | None,
        *,
        waits: tuple[int, int],
        **fetch: Any,
    ) -> None:
        """`waits`: the short and the local fetch wait, in ms (`FetchPace`, with a feed;
        without one the consumer keeps its own)."""
        self._consumer = consumer
        self._feed = feed
        self._options = fetch
        self._fetch: asyncio.Task[dict[TopicPartition, list[Any]]] | None = None
        self.pace = (
            None
            if feed is None
            else FetchPace(consumer, feed, short_ms=waits[0], local_ms=waits[1])
        )

    async def next(self) -> dict[TopicPartition, list[Any]]:
        """What the fetch brought; {} when it found nothing or the feed's records came first."""
        if self._feed is None:
            fetched: dict[TopicPartition, list[Any]] = await self._consumer.getmany(**self._options)
            return fetched
        if self.pace is not None:
            self.pace.check_gap()
        if self._fetch is None:
            self._fetch = asyncio.ensure_future(self._fetched())
        await asyncio.wait((self._fetch, self._feed.arrived()), return_when=asyncio.FIRST_COMPLETED)
        fetch = self._fetch
        if not fetch.done():
            return {}
        self._fetch = None
        return fetch.result()

    async def _fetched(self) -> dict[TopicPartition, list[Any]]:
        batches: dict[TopicPartition, list[Any]] = await self._consumer.getmany(**self._options)
        if self.pace is not None:
            self.pace.fetched(batches)
        return batches

    async def close(self) -> None:
        """Stop the fetch under way, if any (before the consumer stops)."""
        fetch, self._fetch = self._fetch, None
        if fetch is not None:
            fetch.cancel()
            await asyncio.gather(fetch, return_exceptions=True)


def fetch_wait_seconds(arrivals: Arrivals | None, settings: KafkaSettings) -> float:
    """How long a consumer's fetches wait on the broker now: its pace's wait, or the
    settings' when it has none (`/metrics`)."""
    pace = None if arrivals is None else arrivals.pace
    return (settings.fetch_max_wait_ms if pace is None else pace.wait_ms) / 1000
