"""A fetch's acknowledgement, commit and snapshots are awaited while the next fetch is decided.

A pod failure that arrives while the decider waits for the broker to acknowledge the
decisions of the fetch before it, or commits that fetch (one broker round trip, two with
a snapshot's records), used to wait for that before it was decided: the tail of
`bench/reaction.py`. The commit still follows the delivery of the decisions
it covers, and a snapshot is taken of the states as they were at the offset it names,
not as the next fetch left them.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable
from typing import Any

import pytest

from lavalog.controller.decider.core.snapshots import Checkpoint, JobSnapshot, decode_record
from lavalog.controller.decider.service import runner
from lavalog.controller.kafka import KafkaSettings, create_consumer, ensure_topics
from lavalog.controller.kafka.batches import PartitionBatches
from lavalog.events import topics
from lavalog.events.codec import decode_decision
from tests.decider.service.test_service import (
    ONE_POD,
    at_least,
    committed_observed,
    decider,
    publish,
    read,
    running,
)
from tests.held_commits import HeldCommits
from tests.scenarios import JobScript

pytestmark = [pytest.mark.integration, pytest.mark.timeout(90)]


async def one_partition(kafka_settings: KafkaSettings, prefix: str) -> KafkaSettings:
    """This test's own topics, of one partition each."""
    settings = dataclasses.replace(
        kafka_settings,
        topic_prefix=kafka_settings.topic_prefix + prefix,
        observed_partitions=1,
        decisions_partitions=1,
        state_partitions=1,
    )
    await ensure_topics(settings)
    return settings


JOBS = (JobScript("first", ONE_POD).submit(), JobScript("second", ONE_POD).submit())


async def both_decided(settings: KafkaSettings) -> None:
    """Once the first job's observations (published) are decided, publish the second
    job's, and wait until they are decided too."""
    first, second = JOBS
    decided = await read(settings, topics.DECISIONS, at_least(3))
    await publish(settings, second.events)
    decided = await read(settings, topics.DECISIONS, at_least(len(decided) + 3))
    assert {decode_decision(v).key for v in decided} == {first.key, second.key}


async def test_a_fetch_is_decided_while_the_one_before_is_committed_and_snapshotted(
    kafka_settings: KafkaSettings, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = await one_partition(kafka_settings, "one.")
    held = HeldCommits()
    monkeypatch.setattr(runner, "create_consumer", held.creating(create_consumer))
    first = JOBS[0]
    await publish(settings, first.events)
    async with running(decider(settings, snapshot_every=1)):
        await both_decided(settings)
        assert held.asked and all(
            offset <= len(first.events) for offsets in held.asked for offset in offsets.values()
        )  # the first fetch's commit is still held
        held.release.set()
    state = await read(settings, topics.STATE, at_least(2))
    records = [decode_record(value) for value in state]
    assert isinstance(records[1], Checkpoint) and records[1].offset == len(first.events)
    assert isinstance(records[0], JobSnapshot) and records[0].offset == len(first.events)
    assert records[0].state.key == first.key  # the state after the first fetch only


@dataclasses.dataclass
class HeldDeliveries:
    """The decider's batches, sent, with their acknowledgements held until `release` is set."""

    release: asyncio.Event = dataclasses.field(default_factory=asyncio.Event)

    def holding(self, send: Callable[..., Any]) -> Callable[..., Any]:
        async def held(batches: PartitionBatches, partition: int, batch: Any) -> Any:
            delivered = await send(batches, partition, batch)

            async def acknowledged() -> Any:
                await self.release.wait()
                return await delivered

            return asyncio.ensure_future(acknowledged())

        return held


async def test_a_fetch_is_decided_while_the_one_before_waits_for_its_acknowledgement(
    kafka_settings: KafkaSettings, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = await one_partition(kafka_settings, "acks.")
    held = HeldDeliveries()
    commits = HeldCommits()
    commits.release.set()
    monkeypatch.setattr(PartitionBatches, "_send", held.holding(PartitionBatches._send))
    monkeypatch.setattr(runner, "create_consumer", commits.creating(create_consumer))
    first, second = JOBS
    await publish(settings, first.events)
    async with running(decider(settings)):
        await both_decided(settings)
        assert commits.asked == []  # nothing is committed before it is acknowledged
        held.release.set()  # and the service stops: what it decided is committed first
    assert await committed_observed(settings, 0) == len(first.events) + len(second.events)
