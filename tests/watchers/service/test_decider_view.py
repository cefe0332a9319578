"""The decider's view a new leader starts from is folded off the event loop: over a long
log that takes seconds of CPU, during which the loop must go on renewing the Lease."""

from __future__ import annotations

import asyncio
import dataclasses
import threading
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from aiokafka import AIOKafkaProducer

from lavalog.controller.decider.core.partition import PartitionDecider
from lavalog.controller.decider.core.snapshots import Restored, encode_record, restore
from lavalog.controller.kafka import KafkaSettings, create_producer, ensure_topics, topic_name
from lavalog.controller.watchers.service import unwatched
from lavalog.events import topics
from lavalog.events.codec import encode
from tests.decider.support import worker_spec
from tests.scenarios import JobScript

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]


def _off_the_loop(threads: list[bool], fold: Callable[..., Any]) -> Callable[..., Any]:
    """`fold`, noting each time whether it ran on the event loop's thread."""

    def noted(*args: Any, **kwargs: Any) -> Any:
        threads.append(threading.current_thread() is threading.main_thread())
        return fold(*args, **kwargs)

    return noted


async def test_the_snapshots_and_the_log_after_them_are_folded_off_the_loop(
    kafka_settings: KafkaSettings, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = JobScript("job", worker_spec()).submit().podgroup("Inqueue")
    partition = 0  # a job's snapshots sit on the partition number of its facts
    # a snapshot of the job as admitted, then the PodGroup seen after it
    decider = PartitionDecider(Restored(), committed=2**62)
    decider.apply(0, script.events[0])
    producer: AIOKafkaProducer = create_producer(kafka_settings)
    await producer.start()
    try:
        for key, record in decider.snapshot(1):
            value = None if record is None else encode_record(record)
            await producer.send_and_wait(
                topic_name(kafka_settings, topics.STATE),
                value,
                key=key.encode(),
                partition=partition,
            )
        for observation in script.events:
            await producer.send_and_wait(
                topic_name(kafka_settings, topics.OBSERVED),
                encode(observation),
                key=observation.key.encode(),
                partition=partition,
            )
    finally:
        await producer.stop()
    on_loop: dict[str, list[bool]] = {"restore": [], "apply": []}
    monkeypatch.setattr(unwatched, "restore", _off_the_loop(on_loop["restore"], restore))
    monkeypatch.setattr(
        PartitionDecider, "apply", _off_the_loop(on_loop["apply"], PartitionDecider.apply)
    )

    [state] = await unwatched.decider_view(kafka_settings)

    assert (state.key, state.podgroup and state.podgroup.phase) == (script.key, "Inqueue")
    assert on_loop["restore"] and not any(on_loop["restore"])
    assert on_loop["apply"] and not any(on_loop["apply"])


async def test_the_view_reads_the_partitions_the_topics_have(
    kafka_settings: KafkaSettings,
) -> None:
    """Topics a broker created on first use have its default partition count, not the
    settings': the view reads those it finds rather than wait on the others forever."""
    fresh = dataclasses.replace(kafka_settings, topic_prefix=f"few-{uuid.uuid4().hex[:8]}.")
    await ensure_topics(dataclasses.replace(fresh, observed_partitions=4, state_partitions=2))
    assert fresh.observed_partitions > 4

    assert await asyncio.wait_for(unwatched.decider_view(fresh), 30) == []
