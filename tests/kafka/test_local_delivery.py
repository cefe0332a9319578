"""Records delivered in this process reach its consumer only from the offset it expects
next, one after the other, for the partitions it owns; everything else is left to its
fetches; the consumer's fetches wait longer while the feed brings it everything. Pure:
no broker (the fetch wait is set on a stand-in for aiokafka's fetcher; the services'
tests show it on a real consumer)."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest
from aiokafka.structs import TopicPartition

from lavalog.controller.kafka.local_delivery import (
    FED_MIN_BYTES,
    FetchPace,
    LocalDelivery,
    LocalFeed,
)
from lavalog.controller.kafka.settings import KafkaSettings

TOPIC = "t.lavalog.observed"


def deliver(local: LocalDelivery, partition: int, offset: int, *values: bytes) -> None:
    local.delivered(TOPIC, partition, offset, [(b"ns/job", value) for value in values])


def values(feed: LocalFeed, partition: int, offset: int) -> list[bytes | None]:
    return [record.value for record in feed.take(partition, offset)]


def test_records_are_taken_from_the_expected_offset_in_order_with_their_place() -> None:
    local = LocalDelivery()
    feed = local.subscribe(TOPIC, lambda _: True)
    deliver(local, 2, 10, b"a", b"b")
    deliver(local, 2, 12, b"c")

    taken = feed.take(2, 10)

    assert [(r.topic, r.partition, r.offset, r.key, r.value) for r in taken] == [
        (TOPIC, 2, 10, b"ns/job", b"a"),
        (TOPIC, 2, 11, b"ns/job", b"b"),
        (TOPIC, 2, 12, b"ns/job", b"c"),
    ]
    assert feed.take(2, 13) == []  # taken once


def test_a_gap_before_the_records_leaves_them_to_the_fetch_until_it_is_filled() -> None:
    """Offset 10 came from another producer: the consumer must read it first."""
    local = LocalDelivery()
    feed = local.subscribe(TOPIC, lambda _: True)
    deliver(local, 0, 11, b"b", b"c")

    assert feed.take(0, 10) == []
    # the fetch brought 10 (and 11): what the consumer has is dropped, the rest taken
    assert values(feed, 0, 12) == [b"c"]


def test_a_gap_between_the_records_stops_the_run_there() -> None:
    local = LocalDelivery()
    feed = local.subscribe(TOPIC, lambda _: True)
    deliver(local, 0, 5, b"a")
    deliver(local, 0, 7, b"c")

    assert values(feed, 0, 5) == [b"a"]
    assert values(feed, 0, 6) == []
    assert values(feed, 0, 7) == [b"c"]


def test_records_of_partitions_the_consumer_does_not_own_are_not_held() -> None:
    owned = {1}
    local = LocalDelivery()
    feed = local.subscribe(TOPIC, owned.__contains__)
    deliver(local, 0, 0, b"theirs")
    deliver(local, 1, 0, b"mine")

    assert feed.partitions() == [1]
    owned.add(0)  # assigned later: its fetch starts where its records are
    assert feed.take(0, 0) == []


def test_a_consumer_far_behind_holds_no_more_than_the_limit() -> None:
    local = LocalDelivery()
    feed = local.subscribe(TOPIC, lambda _: True, limit=3)
    deliver(local, 0, 100, b"a", b"b", b"c")
    deliver(local, 0, 103, b"d")  # past the limit: those held are dropped

    assert values(feed, 0, 100) == []
    assert values(feed, 0, 103) == [b"d"]


def test_every_consumer_of_the_topic_gets_the_records_and_other_topics_none() -> None:
    local = LocalDelivery()
    first = local.subscribe(TOPIC, lambda _: True)
    second = local.subscribe(TOPIC, lambda _: True)
    other = local.subscribe("t.lavalog.decisions", lambda _: True)
    deliver(local, 0, 0, b"a")

    assert values(first, 0, 0) == values(second, 0, 0) == [b"a"]
    assert other.partitions() == []


async def test_arrived_is_done_at_once_for_records_arrived_since_the_last_look() -> None:
    local = LocalDelivery()
    feed = local.subscribe(TOPIC, lambda _: True)
    deliver(local, 0, 0, b"a")
    assert feed.arrived().done()

    waiting = feed.arrived()
    assert not waiting.done()  # nothing since the last look
    deliver(local, 0, 1, b"b")
    await asyncio.wait_for(waiting, 1)


@pytest.mark.parametrize(("acks", "handed_over"), [("all", True), (1, False), (0, False)])
def test_only_records_every_replica_acknowledged_are_handed_over(
    acks: int | str, handed_over: bool
) -> None:
    """A record the leader alone acknowledged may not be readable yet, or be lost with it."""
    settings = KafkaSettings(acks=acks)  # type: ignore[arg-type]
    assert (LocalDelivery.for_settings(settings) is not None) is handed_over


def test_the_feed_says_what_the_consumer_took_and_when_it_waits_for_a_fetch() -> None:
    local = LocalDelivery()
    feed = local.subscribe(TOPIC, lambda _: True)
    deliver(local, 0, 5, b"a", b"b")
    assert (feed.taken, feed.taken_through(0), feed.gap) == (0, -1, False)

    feed.take(0, 5)
    assert (feed.taken, feed.taken_through(0), feed.gap) == (2, 6, False)

    deliver(local, 0, 8, b"d")  # 7 is another producer's
    assert feed.take(0, 7) == []
    assert feed.gap  # 8 waits for the fetch of 7


def test_records_dropped_past_the_limit_leave_the_consumer_to_its_fetches() -> None:
    local = LocalDelivery()
    feed = local.subscribe(TOPIC, lambda _: True, limit=2)
    deliver(local, 0, 0, b"a", b"b", b"c")
    assert feed.gap


SHORT, LONG = 20, 200


def paced(feed: LocalFeed) -> tuple[FetchPace, Any]:
    """A pace over a stand-in consumer whose fetcher holds the wait, as aiokafka's does."""
    consumer = SimpleNamespace(_fetcher=SimpleNamespace(_fetch_max_wait_ms=500, _fetch_min_bytes=1))
    return FetchPace(consumer, feed, short_ms=SHORT, local_ms=LONG), consumer._fetcher


def fetched(partition: int, *offsets: int) -> dict[TopicPartition, list[Any]]:
    return {TopicPartition(TOPIC, partition): [SimpleNamespace(offset=o) for o in offsets]}


def test_fetches_wait_longer_once_they_bring_only_what_was_taken_here() -> None:
    local = LocalDelivery()
    feed = local.subscribe(TOPIC, lambda _: True)
    pace, fetcher = paced(feed)
    assert fetcher._fetch_max_wait_ms == SHORT  # nothing taken here yet

    deliver(local, 3, 0, b"a", b"b")
    feed.take(3, 0)
    pace.fetched(fetched(3, 0, 1))  # the copies
    assert fetcher._fetch_max_wait_ms == pace.wait_ms == LONG
    assert fetcher._fetch_min_bytes == FED_MIN_BYTES  # held for the whole wait

    pace.fetched({})  # idle: a Command still comes by a fetch
    assert fetcher._fetch_max_wait_ms == LONG


def took_one_here() -> tuple[LocalDelivery, LocalFeed, FetchPace, Any]:
    """A pace whose consumer took offset 0 of partition 3 from the feed."""
    local = LocalDelivery()
    feed = local.subscribe(TOPIC, lambda _: True)
    pace, fetcher = paced(feed)
    deliver(local, 3, 0, b"a")
    feed.take(3, 0)
    return local, feed, pace, fetcher


def test_a_fetch_bringing_a_record_not_taken_here_sets_the_short_wait() -> None:
    """Another producer's record past those taken (a Command), or a follower's whole log."""
    _, _, pace, fetcher = took_one_here()
    pace.fetched(fetched(3, 0))
    assert fetcher._fetch_max_wait_ms == LONG

    pace.fetched(fetched(3, 0, 1))
    assert (fetcher._fetch_max_wait_ms, fetcher._fetch_min_bytes) == (SHORT, 1)
    pace.fetched(fetched(4, 0))  # a partition nothing was taken of
    assert fetcher._fetch_max_wait_ms == SHORT


def test_a_record_waiting_for_a_fetch_sets_the_short_wait_at_once() -> None:
    local, feed, pace, fetcher = took_one_here()
    pace.fetched({})
    assert fetcher._fetch_max_wait_ms == LONG

    deliver(local, 3, 2, b"c")  # 1 is another producer's
    feed.take(3, 1)
    pace.check_gap()
    assert fetcher._fetch_max_wait_ms == SHORT
    pace.fetched(fetched(3, 1))  # the fetch brings 1: taken by the consumer, not here
    assert fetcher._fetch_max_wait_ms == SHORT
    feed.take(3, 2)  # then 2 from the feed, whose fetch brings a copy
    pace.fetched(fetched(3, 2))
    assert fetcher._fetch_max_wait_ms == LONG
