"""A fetch's commit and snapshots are written while the next fetch is decided.

A pod failure that arrives while the decider commits the fetch before it (one broker
round trip, two with a snapshot's records) used to wait for that before it was decided:
the tail of `bench/reaction.py`. The commit still follows the delivery of the decisions
it covers, and a snapshot is taken of the states as they were at the offset it names,
not as the next fetch left them.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer

from lavalog.controller.decider.core.snapshots import Checkpoint, JobSnapshot, decode_record
from lavalog.controller.decider.service import runner
from lavalog.controller.kafka import KafkaSettings, create_consumer, ensure_topics
from lavalog.events import topics
from lavalog.events.codec import decode_decision
from tests.decider.service.test_service import (
    ONE_POD,
    at_least,
    decider,
    publish,
    read,
    running,
)
from tests.scenarios import JobScript

pytestmark = [pytest.mark.integration, pytest.mark.timeout(90)]


@dataclasses.dataclass
class HeldCommits:
    """The decider's consumer, with each commit held until `release` is set."""

    release: asyncio.Event = dataclasses.field(default_factory=asyncio.Event)
    asked: list[dict[Any, int]] = dataclasses.field(default_factory=list)

    def creating(self, create: Callable[..., AIOKafkaConsumer]) -> Callable[..., AIOKafkaConsumer]:
        def create_holding(*args: Any, **kwargs: Any) -> AIOKafkaConsumer:
            consumer = create(*args, **kwargs)
            commit = consumer.commit

            async def held(offsets: dict[Any, int]) -> None:
                self.asked.append(dict(offsets))
                await self.release.wait()
                await commit(offsets)

            consumer.commit = held
            return consumer

        return create_holding


@pytest.fixture
async def settings(kafka_settings: KafkaSettings) -> KafkaSettings:
    """Topics of one partition each: every fetch is one batch, every commit one offset."""
    one = dataclasses.replace(
        kafka_settings,
        topic_prefix=kafka_settings.topic_prefix + "one.",
        observed_partitions=1,
        decisions_partitions=1,
        state_partitions=1,
    )
    await ensure_topics(one)
    return one


@pytest.fixture
def held(monkeypatch: pytest.MonkeyPatch) -> HeldCommits:
    """The decider's commits, held until released."""
    commits = HeldCommits()
    monkeypatch.setattr(runner, "create_consumer", commits.creating(create_consumer))
    return commits


async def test_a_fetch_is_decided_while_the_one_before_is_committed_and_snapshotted(
    settings: KafkaSettings, held: HeldCommits
) -> None:
    first = JobScript("first", ONE_POD).submit()
    second = JobScript("second", ONE_POD).submit()

    await publish(settings, first.events)
    async with running(decider(settings, snapshot_every=1)):
        decided = await read(settings, topics.DECISIONS, at_least(3))
        await publish(settings, second.events)
        decided = await read(settings, topics.DECISIONS, at_least(len(decided) + 3))
        assert {decode_decision(v).key for v in decided} == {first.key, second.key}
        assert held.asked and all(
            offset <= len(first.events) for offsets in held.asked for offset in offsets.values()
        )  # the first fetch's commit is still held
        held.release.set()
    state = await read(settings, topics.STATE, at_least(2))
    records = [decode_record(value) for value in state]
    assert isinstance(records[1], Checkpoint) and records[1].replay_from == len(first.events)
    assert isinstance(records[0], JobSnapshot) and records[0].offset == len(first.events)
    assert records[0].state.key == first.key  # the state after the first fetch only


async def decided_one_fetch_each(settings: KafkaSettings, scripts: list[JobScript]) -> None:
    """Each script's first facts published once the last script's are decided: a fetch
    each (a one-pod Job's first facts lead to three decisions)."""
    decided: list[bytes] = []
    for script in scripts:
        await publish(settings, script.events)
        decided = await read(settings, topics.DECISIONS, at_least(len(decided) + 3))


async def test_fetches_decided_while_a_commit_is_written_join_the_next_one(
    settings: KafkaSettings, held: HeldCommits
) -> None:
    """However many fetches come while one commit is held, each is decided at once, and
    their commits become one, written after it."""
    scripts = [JobScript(f"job-{n}", ONE_POD).submit() for n in range(4)]

    async with running(decider(settings)):
        await decided_one_fetch_each(settings, scripts)
        assert len(held.asked) == 1  # the first fetch's commit, still held
        held.release.set()
        end = sum(len(script.events) for script in scripts)
        async with asyncio.timeout(30):
            while not held.asked or max(held.asked[-1].values()) < end:  # noqa: ASYNC110
                await asyncio.sleep(0.05)
    assert len(held.asked) == 2  # the three fetches decided meanwhile: one commit


async def test_commits_are_spaced_and_the_stop_writes_what_waits(
    settings: KafkaSettings, held: HeldCommits, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One commit per `CHECKPOINT_SECONDS` however many fetches are decided, and none lost
    at the stop, which writes the last one at once."""
    held.release.set()
    monkeypatch.setattr(runner, "CHECKPOINT_SECONDS", 60.0)
    scripts = [JobScript(f"job-{n}", ONE_POD).submit() for n in range(4)]

    async with running(decider(settings)):
        await decided_one_fetch_each(settings, scripts)
        assert len(held.asked) == 1  # the first fetch's: the next is not due for a minute
    assert len(held.asked) == 2
    assert held.asked[-1] == {next(iter(held.asked[0])): sum(len(s.events) for s in scripts)}
