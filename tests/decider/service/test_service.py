"""DeciderService against the development broker: decisions, restart, poison, timers."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any

import pytest
from aiokafka import TopicPartition

from lavalog.controller.decider.core import replay
from lavalog.controller.decider.core.due_timers import DueTimer
from lavalog.controller.decider.core.partition import PartitionDecider
from lavalog.controller.decider.core.snapshots import Restored, encode_record
from lavalog.controller.decider.service.runner import DeciderService
from lavalog.controller.kafka import KafkaSettings, create_consumer, create_producer, topic_name
from lavalog.controller.kafka.local_delivery import FED_MIN_BYTES, LocalDelivery
from lavalog.controller.watchers.service.publisher import open_publisher
from lavalog.events import topics
from lavalog.events.codec import decode_decision, decode_observation, encode
from lavalog.events.decisions import ActionDecided, AnyDecision, PhaseChanged
from lavalog.events.observations import AnyObservation, TimerFired
from lavalog.projections.core.audit import audit
from tests.examples.scripts import max_retry_exhausted, tensorflow_restart_task
from tests.kafka.fetched import until_fetched
from tests.scenarios import INCARNATION_IDS, JobScript

pytestmark = [pytest.mark.integration, pytest.mark.timeout(90)]

ONE_POD = {"tasks": [{"name": "w", "replicas": 1, "template": {}}]}


def decider(settings: KafkaSettings, **options: Any) -> DeciderService:
    """A decider in a consumer group of this test's own."""
    return DeciderService(kafka=settings, group_id="decider", **options)


async def publish(settings: KafkaSettings, events: Iterable[AnyObservation]) -> None:
    async with create_producer(settings) as producer:
        for event in events:
            topic = topic_name(settings, topics.OBSERVED)
            await producer.send_and_wait(topic, encode(event), key=event.key.encode())


async def publish_raw(settings: KafkaSettings, value: bytes, key: str) -> None:
    async with create_producer(settings) as producer:
        await producer.send_and_wait(topic_name(settings, topics.OBSERVED), value, key=key.encode())


async def read(
    settings: KafkaSettings, base: str, until: Callable[[list[bytes]], bool]
) -> list[bytes]:
    """Messages of a topic (all partitions, from the start) until `until` holds of them."""
    consumer = create_consumer(settings, group_id=None)
    await consumer.start()
    try:
        consumer.subscribe([topic_name(settings, base)])
        found: list[bytes] = []
        async with asyncio.timeout(30):
            while not until(found):
                batches = await consumer.getmany(timeout_ms=200)
                found += [m.value for ms in batches.values() for m in ms]
        return found
    finally:
        await consumer.stop()


def at_least(count: int) -> Callable[[list[bytes]], bool]:
    return lambda found: len(found) >= count


@contextlib.asynccontextmanager
async def running(service: DeciderService) -> AsyncIterator[DeciderService]:
    task = asyncio.create_task(service.run())
    try:
        yield service
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def by_job(decisions: Iterable[AnyDecision]) -> dict[str, list[str]]:
    grouped: dict[str, list[str]] = {}
    for decision in decisions:
        grouped.setdefault(decision.key, []).append(decision.id)
    return grouped


async def test_decisions_match_the_pure_decider_and_a_restart_repeats_none(kafka_settings):
    events = tensorflow_restart_task() + max_retry_exhausted()
    expected = [d for _, ds in replay(events) for d in ds]
    await publish(kafka_settings, events)

    async with running(decider(kafka_settings, snapshot_every=10)):
        found = await read(kafka_settings, topics.DECISIONS, at_least(len(expected)))
    assert by_job(decode_decision(v) for v in found) == by_job(expected)

    late = JobScript("late", ONE_POD).submit().events
    await publish(kafka_settings, late)
    async with running(decider(kafka_settings)):
        found = await read(kafka_settings, topics.DECISIONS, at_least(len(expected) + 3))
        await asyncio.sleep(1.0)  # anything decided twice would have arrived by now
        found = await read(kafka_settings, topics.DECISIONS, at_least(len(found)))
    ids = [decode_decision(v).id for v in found]
    assert len(ids) == len(set(ids))
    assert {decode_decision(v).key for v in found} == {
        "ml/tf-dist",
        "ml/flaky-train",
        "default/late",
    }


async def test_a_poison_message_goes_to_the_dead_letter_topic_and_the_partition_goes_on(
    kafka_settings,
):
    script = JobScript("after-poison", ONE_POD).submit()
    await publish_raw(kafka_settings, b'{"type": "PodObserved", "broken": true}', script.key)
    await publish(kafka_settings, script.events)

    async with running(decider(kafka_settings)):
        letters = await read(kafka_settings, topics.DEADLETTER, at_least(1))
        found = await read(kafka_settings, topics.DECISIONS, at_least(3))

    assert b'"consumer":"decider"' in letters[0] and b"broken" in letters[0]
    assert decode_decision(found[0]).key == script.key


def running_job(name: str) -> JobScript:
    """A one-pod Job submitted and running."""
    script = JobScript(name, ONE_POD, start=time.time()).submit().podgroup("Inqueue")
    return script.pods("w", 1, "Pending").pods("w", 1, "Running")


def decided_about(job: str) -> Callable[[list[bytes]], bool]:
    return lambda found: any(decode_decision(v).key == f"default/{job}" for v in found)


async def until_assigned_all(service: DeciderService) -> None:
    """Until the service owns every partition of its topic (the group has formed)."""
    async with asyncio.timeout(30):
        while len(service.assigned) < service.kafka.observed_partitions:  # noqa: ASYNC110
            await asyncio.sleep(0.05)


async def until_fetch_wait(service: DeciderService, seconds: float) -> None:
    async with asyncio.timeout(30):
        while service.gauges()["fetch_wait_seconds"] != seconds:  # noqa: ASYNC110
            await asyncio.sleep(0.05)


async def test_fetches_wait_longer_while_this_process_hands_over_every_fact(kafka_settings):
    """Fed by its watchers here, the decider's fetches bring only copies: they wait the
    local wait (set on the real consumer's fetcher), and a fact from another producer
    still comes by them and is decided."""
    settings = dataclasses.replace(kafka_settings, fetch_max_wait_local_ms=300)
    local = LocalDelivery()
    async with running(decider(settings, local=local)) as service:
        await until_assigned_all(service)
        assert service.gauges()["fetch_wait_seconds"] == settings.fetch_max_wait_ms / 1000
        consumer = service._require_consumer()
        consumer.pause(*consumer.assignment())  # so that every fact is taken here
        async with open_publisher(settings, local=local) as publisher:
            await publisher.publish(running_job("here").events)
        await read(settings, topics.DECISIONS, decided_about("here"))
        consumer.resume(*consumer.assignment())

        await until_fetch_wait(service, 0.3)
        assert consumer._fetcher._fetch_max_wait_ms == 300
        assert consumer._fetcher._fetch_min_bytes == FED_MIN_BYTES
        await publish(settings, running_job("elsewhere").events)
        await read(settings, topics.DECISIONS, decided_about("elsewhere"))


async def test_a_decider_fed_by_its_fetches_alone_keeps_the_short_wait(kafka_settings):
    """A follower's decider: its watchers do not lead, so every fact comes by a fetch."""
    settings = dataclasses.replace(kafka_settings, fetch_max_wait_local_ms=300)
    async with running(decider(settings, local=LocalDelivery())) as service:
        await publish(settings, running_job("there").events)
        await read(settings, topics.DECISIONS, decided_about("there"))
        await until_fetched(service._require_consumer())
        assert service.gauges()["fetch_wait_seconds"] == settings.fetch_max_wait_ms / 1000


def failing_with_a_timeout(name: str) -> JobScript:
    """A running Job whose pod fails now, with an AbortJob policy due one second later."""
    spec = {
        "tasks": [{"name": "w", "replicas": 2, "template": {}}],
        "policies": [{"event": "PodFailed", "action": "AbortJob", "timeout": "1s"}],
    }
    script = JobScript(name, spec, start=time.time()).submit().podgroup("Inqueue")
    script.pods("w", 2, "Pending").pods("w", 2, "Running")
    return script.at(time.time()).pod("w", 0, "Failed", exit_code=1)


async def test_a_policy_timeout_fires_through_the_log(kafka_settings):
    script = failing_with_a_timeout("timed")
    await publish(kafka_settings, script.events)

    def acted(found: list[bytes]) -> bool:
        return any(isinstance(decode_decision(v), ActionDecided) for v in found)

    async with running(decider(kafka_settings)):
        decisions = [
            decode_decision(v) for v in await read(kafka_settings, topics.DECISIONS, acted)
        ]
        count = len(script.events) + 1
        observed = [
            decode_observation(v)
            for v in await read(kafka_settings, topics.OBSERVED, at_least(count))
        ]

    fired = [o for o in observed if isinstance(o, TimerFired)]
    actions = [d for d in decisions if isinstance(d, ActionDecided)]
    assert len(fired) == 1
    assert [(a.action, a.timer_id) for a in actions] == [("AbortJob", fired[0].timer_id)]


@pytest.mark.parametrize("restart", [False, True], ids=["running-on", "restarted-between"])
async def test_a_reused_name_with_an_invalid_spec_fails_whether_or_not_the_decider_restarted(
    kafka_settings, restart
):
    """Issue 15: `reuse3` completes, is deleted, and is created again with duplicate task
    names. The new Job ends Failed/InvalidSpec, and a restart in between changes nothing
    (the audit recomputes exactly what was recorded)."""
    task = ONE_POD["tasks"][0]
    first = (
        JobScript("reuse3", ONE_POD, uid="uid-first", ids=INCARNATION_IDS)
        .submit()
        .podgroup("Inqueue")
    )
    first.pod("w", 0, "Running").pod("w", 0, "Succeeded").delete()
    second = JobScript(
        "reuse3", {"tasks": [task, task]}, uid="uid-second", start=first.time, ids=INCARNATION_IDS
    )
    old, new = first.events, second.submit().events
    before = [d for _, ds in replay(old) for d in ds]
    expected = [d for _, ds in replay(old + new) for d in ds]

    await publish(kafka_settings, old)
    async with running(decider(kafka_settings)):
        await read(kafka_settings, topics.DECISIONS, at_least(len(before)))
        if not restart:
            await publish(kafka_settings, new)
            found = await read(kafka_settings, topics.DECISIONS, at_least(len(expected)))
    if restart:
        await publish(kafka_settings, new)
        async with running(decider(kafka_settings)):
            found = await read(kafka_settings, topics.DECISIONS, at_least(len(expected)))

    recorded = [decode_decision(v) for v in found]
    assert recorded == expected
    failed = [d for d in recorded if isinstance(d, PhaseChanged) and d.job_uid == "uid-second"]
    assert [(d.phase, d.reason) for d in failed] == [("Failed", "InvalidSpec")]
    assert audit([*old, *new, *recorded], replay).ok


async def commit_observed(settings: KafkaSettings, offsets: dict[int, int]) -> None:
    """Commit these offsets of `lavalog.observed` for the deciders' group."""
    topic = topic_name(settings, topics.OBSERVED)
    consumer = create_consumer(settings, group_id="decider")
    consumer.assign([TopicPartition(topic, n) for n in offsets])
    async with consumer:
        await consumer.commit({TopicPartition(topic, n): at for n, at in offsets.items()})


async def committed_observed(settings: KafkaSettings, partition: int) -> int | None:
    tp = TopicPartition(topic_name(settings, topics.OBSERVED), partition)
    consumer = create_consumer(settings, group_id="decider")
    consumer.assign([tp])
    async with consumer:
        offset: int | None = await consumer.committed(tp)
    return offset


async def test_a_rebuild_below_the_groups_commit_never_moves_the_commit_back(kafka_settings):
    """A member whose snapshot is older than the group's commit (its predecessor crashed
    after deciding on, or the snapshot was not found) rebuilds the states from it up to
    the commit, deciding nothing again. Nor may it commit there: a member that goes
    mid-rebuild would move the commit back, and the next owner would decide everything
    after it again (in the churn run a commit went from 21,028 back to 4,000, and
    1,051 decisions were carried out again six minutes late). Here the rebuild cannot
    reach the commit, which stands for the member going before it does."""
    events = tensorflow_restart_task()
    async with create_producer(kafka_settings) as producer:
        for event in events:
            sent = await producer.send_and_wait(
                topic_name(kafka_settings, topics.OBSERVED), encode(event), key=event.key.encode()
            )
    partition, ahead = sent.partition, len(events) + 5
    await commit_observed(kafka_settings, {partition: ahead})

    async with running(decider(kafka_settings, max_batch=2)) as service:
        async with asyncio.timeout(30):
            while True:  # until it has rebuilt all there is
                if service.lag().get(partition) == 0:
                    break
                await asyncio.sleep(0.05)
    assert service.counters["observations"] == len(events)
    assert service.counters["decisions"] == 0
    assert await committed_observed(kafka_settings, partition) == ahead


async def test_a_snapshot_ahead_of_the_groups_commit_is_committed_on_adoption(kafka_settings):
    """A snapshot is written once its fetch's decisions are delivered, even when the
    commit after them failed (a rebalance meanwhile): it stands for the commit. Its next
    owner commits it at once; else, with nothing new to decide, the group's commit stayed
    behind for good (in the churn run 1,044 observations 'behind' that nothing would
    ever decide)."""
    events = tensorflow_restart_task()
    async with create_producer(kafka_settings) as producer:
        for event in events:
            sent = await producer.send_and_wait(
                topic_name(kafka_settings, topics.OBSERVED), encode(event), key=event.key.encode()
            )
        decided = PartitionDecider(Restored(), committed=2**62)
        for offset, event in enumerate(events):
            decided.apply(offset, event)
        for key, record in decided.snapshot(len(events)):
            await producer.send_and_wait(
                topic_name(kafka_settings, topics.STATE),
                None if record is None else encode_record(record),
                key=key.encode(),
                partition=sent.partition,
            )

    async with running(decider(kafka_settings)):
        async with asyncio.timeout(30):
            while True:  # with nothing new to decide
                if await committed_observed(kafka_settings, sent.partition) == len(events):
                    break
                await asyncio.sleep(0.1)


async def test_a_stop_that_comes_as_a_timer_is_added_stops_the_timers(
    kafka_settings: KafkaSettings,
) -> None:
    """A stop meeting a new timer in the same turn of the loop is not lost: on Python
    3.11, `asyncio.wait_for` returns what it waited for when cancelled in that turn, and
    the timer loop ran on, so the service never finished stopping."""
    service = decider(kafka_settings)
    async with running(service):
        async with asyncio.timeout(30):
            while not service.ready:  # noqa: ASYNC110 (a flag the service exposes, no event)
                await asyncio.sleep(0.05)
        (timers,) = [t for t in asyncio.all_tasks() if t.get_name() == "decider-timers"]
        far = DueTimer(fire_at=time.time() + 3600, key="default/j", job_uid="u", timer_id="t")
        service._add_timer(far)
        timers.cancel()
        await asyncio.wait({timers}, timeout=10)
        assert timers.cancelled()


async def test_what_this_process_delivers_is_decided_without_waiting_for_a_fetch(kafka_settings):
    """The watchers' observations and the decider's own fired timers, in one process, are
    decided while its consumer fetches nothing at all; the copies its fetch then brings
    are not decided again."""
    script = failing_with_a_timeout("here")
    local = LocalDelivery()

    def acted(found: list[bytes]) -> bool:
        return any(isinstance(decode_decision(v), ActionDecided) for v in found)

    async with running(decider(kafka_settings, local=local)) as service:
        await until_assigned_all(service)
        consumer = service._require_consumer()
        consumer.pause(*consumer.assignment())
        async with open_publisher(kafka_settings, local=local) as publisher:
            await publisher.publish(script.events)
        decided = await read(kafka_settings, topics.DECISIONS, acted)

        consumer.resume(*consumer.assignment())
        await until_fetched(consumer)
        await asyncio.sleep(0.5)  # anything decided twice would have been produced by now
        again = await read(kafka_settings, topics.DECISIONS, at_least(len(decided)))

    assert service.counters["timers_fired"] == 1
    assert service.counters["delivered_here"] == len(script.events) + 1  # and the timer
    ids = [decode_decision(v).id for v in again]
    assert len(ids) == len(set(ids)) == len(decided)
