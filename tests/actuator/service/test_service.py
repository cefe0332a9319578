"""The actuator service on the development broker and the simulated cluster: per-job order,
offsets committed past what is done, a restart that repeats without duplicating, a crash
that repeats only what was in flight, and a partition that goes on past a decision that
cannot be carried out."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import signal
import sys
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from contextlib import asynccontextmanager, suppress
from typing import Any

import msgspec
import pytest
from aiokafka import TopicPartition

from lavalog.controller.actuator.core.offsets import Progress
from lavalog.controller.actuator.core.status_hold import HOLD_SECONDS
from lavalog.controller.actuator.service.progress_log import ProgressLog
from lavalog.controller.actuator.service.runner import ActuatorService
from lavalog.controller.kafka import KafkaSettings, create_consumer, create_producer, topic_name
from lavalog.controller.kafka.batches import PartitionBatches
from lavalog.controller.kafka.local_delivery import LocalDelivery
from lavalog.controller.kafka.settings import env_var
from lavalog.controller.kube import Kube
from lavalog.events.codec import encode
from lavalog.events.decisions import (
    AnyDecision,
    PhaseChanged,
    PodGroupCreate,
    PodRef,
    PodsCreate,
    PodsKill,
    StatusWrite,
)
from lavalog.events.topics import DECISIONS
from lavalog.simulator.server import SimulatedCluster
from tests.actuator.support import (
    EVENTS,
    PODGROUPS,
    decision,
    events_of,
    initiated_status,
    items,
    job_path,
    pods_path,
    read,
    status,
    submit,
    tf_pods,
)
from tests.kafka.fetched import until_fetched

pytestmark = pytest.mark.integration


def lifecycle(job: dict[str, Any]) -> list[AnyDecision]:
    """A job's start as the decider writes it; its status counts only go up, so a job whose
    decisions ran out of order would end with fewer than 3 running."""
    name = job["metadata"]["name"]
    return [
        decision(PodGroupCreate, job, podgroup=f"{name}-pg", min_member=3, queue="default"),
        decision(StatusWrite, job, status=status("Pending", 0)),
        tf_pods(job),
        decision(PhaseChanged, job, previous="Pending", phase="Running"),
        *(decision(StatusWrite, job, status=status("Running", n)) for n in (1, 2, 3)),
    ]


async def produce(
    settings: KafkaSettings, messages: Sequence[bytes | AnyDecision], partition: int | None = None
) -> dict[int, int]:
    """Send in order; the offset one past the last message, per partition."""
    topic = topic_name(settings, DECISIONS)
    ends: dict[int, int] = {}
    async with create_producer(settings) as producer:
        for message in messages:
            if isinstance(message, bytes):
                sent = await producer.send_and_wait(topic, message, partition=partition)
            else:
                value, key = encode(message), message.key.encode()
                sent = await producer.send_and_wait(topic, value, key=key, partition=partition)
            ends[sent.partition] = sent.offset + 1
    return ends


@asynccontextmanager
async def running(service: ActuatorService) -> AsyncIterator[ActuatorService]:
    task = asyncio.create_task(service.run())
    try:
        yield service
    finally:
        task.cancel()
        with suppress(asyncio.CancelledError):
            await task


async def until(condition: Callable[[], bool], within: float = 60.0) -> None:
    async with asyncio.timeout(within):
        while True:
            if condition():
                return
            await asyncio.sleep(0.05)


async def committed(settings: KafkaSettings, group: str) -> dict[int, int]:
    """The group's committed offsets on the decisions topic, per partition that has one."""
    topic = topic_name(settings, DECISIONS)
    partitions = [TopicPartition(topic, n) for n in range(settings.decisions_partitions)]
    consumer = create_consumer(settings, group_id=group)
    consumer.assign(partitions)
    async with consumer:
        found = {tp.partition: await consumer.committed(tp) for tp in partitions}
    return {partition: offset for partition, offset in found.items() if offset is not None}


async def progress(settings: KafkaSettings, group: str, partition: int) -> Progress | None:
    """What the group's offset commit and its progress record say of one partition."""
    committed_offsets = await committed(settings, group)
    if partition not in committed_offsets:
        return None
    offset = committed_offsets[partition]
    recorded = (await ProgressLog(settings, group).last([partition])).get(partition)
    done = () if recorded is None else tuple(n for n in recorded.done if n >= offset)
    return Progress(offset, done)


async def until_async(condition: Callable[[], Awaitable[bool]], within: float = 60.0) -> None:
    async with asyncio.timeout(within):
        while True:
            if await condition():
                return
            await asyncio.sleep(0.1)


def handled(service: ActuatorService) -> int:
    """Decisions carried out, and status writes left out for a later one (`lane_order`)."""
    return service.counters.applied + service.counters.coalesced


def service(
    kube: Kube,
    settings: KafkaSettings,
    group: str,
    *,
    status_hold: float = HOLD_SECONDS,
    local: LocalDelivery | None = None,
) -> ActuatorService:
    """With phase changes as Events (`--phase-events`): the Events these tests follow."""
    return ActuatorService(
        kube=kube,
        kafka=settings,
        group_id=group,
        qps=1000,
        burst=1000,
        phase_events=True,
        status_hold=status_hold,
        local=local,
    )


async def cluster_state(kube: Kube, jobs: list[dict[str, Any]]) -> dict[str, Any]:
    pods = await items(kube, pods_path())
    events = await items(kube, EVENTS)
    return {
        "pods": sorted(p["metadata"]["name"] for p in pods),
        "podgroups": sorted(p["metadata"]["name"] for p in await items(kube, PODGROUPS)),
        "events": {j["metadata"]["name"]: len(events_of(events, j)) for j in jobs},
        "running": {
            j["metadata"]["name"]: (await read(kube, job_path(j)))["status"]["running"]
            for j in jobs
        },
    }


async def test_decisions_are_applied_in_job_order_committed_and_repeated_harmlessly(
    kube: Kube, kafka_settings: KafkaSettings
) -> None:
    jobs = [await submit(kube, name=f"tf-{n}") for n in range(4)]
    lifecycles = [lifecycle(job) for job in jobs]
    # Interleaved as the decider would write them for jobs progressing together.
    stream = [d for step in zip(*lifecycles, strict=True) for d in step]
    ends = await produce(kafka_settings, stream)
    group = "actuator"

    async with running(service(kube, kafka_settings, group)) as first:
        await until(lambda: first.ready)
        await until(lambda: handled(first) == len(stream))
    assert (first.counters.failed, first.counters.skipped) == (0, 0)
    state = await cluster_state(kube, jobs)
    assert state == {
        "pods": sorted(f"tf-{n}-{t}" for n in range(4) for t in ("ps-0", "worker-0", "worker-1")),
        "podgroups": [f"tf-{n}-pg" for n in range(4)],
        "events": {f"tf-{n}": 1 for n in range(4)},
        "running": {f"tf-{n}": 3 for n in range(4)},
    }
    # A graceful stop commits everything it carried out.
    assert await committed(kafka_settings, group) == ends

    # Restarted in the same group: nothing is done again, new decisions are.
    later = decision(StatusWrite, jobs[0], status=status("Running", 3, retries=1))
    await produce(kafka_settings, [later])
    async with running(service(kube, kafka_settings, group)) as second:
        await until(lambda: second.counters.applied == 1)
        await asyncio.sleep(0.5)
        assert second.counters.applied == 1
    assert (await read(kube, job_path(jobs[0])))["status"]["retryCount"] == 1

    # A crash before any commit (here: a new group) repeats every decision: same cluster.
    fresh = f"{kafka_settings.topic_prefix}actuator-{uuid.uuid4().hex[:6]}"
    async with running(service(kube, kafka_settings, fresh)) as replay:
        await until(lambda: handled(replay) == len(stream) + 1)
    assert replay.counters.failed == 0
    assert await cluster_state(kube, jobs) == state


async def test_a_decision_that_cannot_be_carried_out_does_not_stall_its_partition(
    kube: Kube, kafka_settings: KafkaSettings
) -> None:
    bad_job = await submit(kube, name="bad")
    good_job = await submit(kube, name="good")
    invalid = decision(
        PodsCreate,
        bad_job,
        job_version=1,
        podgroup="pg",
        pods=(PodRef(name="bad-Worker-0", task="Worker", index=0),),
    )
    stream: list[bytes | AnyDecision] = [
        invalid,
        b"not a decision",
        decision(StatusWrite, bad_job, status=status("Pending", 0)),
        tf_pods(good_job),
    ]
    ends = await produce(kafka_settings, stream, partition=0)
    group = "actuator"

    async with running(service(kube, kafka_settings, group)) as actuator:
        await until(lambda: actuator.counters.applied == 2)
        await until(lambda: actuator.in_flight == 0)
        await until(lambda: actuator.gauges()["events_waiting"] == 0)  # the warning
    assert actuator.counters.failed == 2  # the invalid pod (422) and the poison message
    assert (await read(kube, job_path(bad_job)))["status"]["state"]["phase"] == "Pending"
    assert len(await items(kube, pods_path())) == 3
    [warning] = events_of(await items(kube, EVENTS), bad_job)
    assert warning["reason"] == "FailedCreate"
    assert await committed(kafka_settings, group) == ends


async def test_two_members_share_the_partitions_and_hand_over_without_losing_a_decision(
    kube: Kube, kafka_settings: KafkaSettings
) -> None:
    jobs = [await submit(kube, name=f"tf-{n}") for n in range(8)]
    lifecycles = [lifecycle(job) for job in jobs]
    stream = [d for step in zip(*lifecycles, strict=True) for d in step]
    half = len(stream) // 2
    group = "actuator"

    async with running(service(kube, kafka_settings, group)) as first:
        await produce(kafka_settings, stream[:half])
        await until(lambda: first.counters.applied > 0)
        async with running(service(kube, kafka_settings, group)) as second:
            # The second member joins: partitions are handed over mid-stream.
            await until(lambda: second.ready)
            await produce(kafka_settings, stream[half:])
            await until(lambda: handled(first) + handled(second) >= len(stream))
            await until(lambda: first.in_flight == second.in_flight == 0)
    assert second.counters.applied > 0
    assert first.counters.failed == second.counters.failed == 0
    state = await cluster_state(kube, jobs)
    assert state["running"] == {f"tf-{n}": 3 for n in range(8)}
    assert len(state["pods"]) == 24 and len(state["podgroups"]) == 8
    assert state["events"] == {f"tf-{n}": 1 for n in range(8)}


async def test_an_event_the_api_server_holds_up_holds_up_no_pod_and_is_done_once_written(
    sim_cluster: SimulatedCluster, kube: Kube, kafka_settings: KafkaSettings
) -> None:
    """Events are written off the jobs' lanes: the job's pods are created while the Event
    decided before them waits for the API server; the Event's offset is committed only
    once it is written (until then the commit records the pods' decision as done past it)."""
    job = await submit(kube)
    stream: list[AnyDecision] = [
        decision(PhaseChanged, job, previous="", phase="Pending"),
        tf_pods(job),
    ]
    sim_cluster.faults.hold(EVENTS)
    ends = await produce(kafka_settings, stream, partition=0)
    group = "actuator"

    async with running(service(kube, kafka_settings, group)) as actuator:
        await until(lambda: actuator.counters.applied == 1)
        assert len(await items(kube, pods_path())) == 3
        assert actuator.gauges()["events_waiting"] == 1
        await until_async(lambda: _equals(progress(kafka_settings, group, 0), Progress(0, (1,))))

        sim_cluster.faults.release(EVENTS)
        await until(lambda: actuator.counters.applied == 2)
        await until_async(lambda: _equals(progress(kafka_settings, group, 0), Progress(ends[0])))
    [pending] = events_of(await items(kube, EVENTS), job)
    assert pending["reason"] == "Pending"


async def test_a_decision_the_decider_produced_again_is_not_carried_out_again(
    sim_cluster: SimulatedCluster, kube: Kube, kafka_settings: KafkaSettings
) -> None:
    """The decider is at-least-once: after a restart it may produce decisions again (same
    ids). One carried out here already costs no API call the second time, in its lane
    (the first copy still queued ahead) or after it (the first copy done)."""
    job = await submit(kube)
    create, event = tf_pods(job), decision(PhaseChanged, job, previous="", phase="Pending")
    group = "actuator"
    async with running(service(kube, kafka_settings, group)) as actuator:
        await produce(kafka_settings, [create, event, create, event], partition=0)
        await until(lambda: actuator.counters.repeated == 2)
        ends = await produce(kafka_settings, [create], partition=0)
        await until(lambda: actuator.counters.repeated == 3)
        await until_async(lambda: _equals(progress(kafka_settings, group, 0), Progress(ends[0])))
    assert actuator.counters.applied == 2
    assert sim_cluster.api_calls["create pods"] == 3
    assert len(events_of(await items(kube, EVENTS), job)) == 1


async def test_a_status_write_queued_behind_itself_is_written_once(
    sim_cluster: SimulatedCluster, kube: Kube, kafka_settings: KafkaSettings
) -> None:
    """A status write decided again (at-least-once) while its first copy still waits in
    the job's lane: the first is left out for the later one of its phase (`superseded`),
    which is then carried out, not taken for a repeat of a write never made (in the churn
    run a job's Failed status was lost so, and the run waited minutes for that job)."""
    job = await submit(kube)
    failed = decision(StatusWrite, job, status=status("Failed", 0))
    # All in one fetch: both copies are in the lane, behind the pod creates, together.
    await produce(kafka_settings, [tf_pods(job), failed, failed], partition=0)
    async with running(service(kube, kafka_settings, "actuator")) as actuator:
        await until(lambda: handled(actuator) + actuator.counters.repeated == 3)
        await until(lambda: actuator.in_flight == 0)
    assert (actuator.counters.coalesced, actuator.counters.repeated) == (1, 0)
    assert (await read(kube, job_path(job)))["status"]["state"]["phase"] == "Failed"
    assert sim_cluster.api_calls["update jobs/status"] == 1


async def test_a_status_write_that_waited_for_the_budget_writes_the_latest_of_its_phase(
    sim_cluster: SimulatedCluster, kube: Kube, kafka_settings: KafkaSettings
) -> None:
    """Budget for one call every 2 s: the job's first Running write waits behind two other
    jobs' writes; meanwhile two more Running writes of the job are decided. When its turn
    comes the latest goes in its place, and the one between is left out: one call for
    the three, and the status is the last one."""
    others = [await submit(kube, name=f"other-{n}") for n in range(2)]
    job = await submit(kube, name="counted")
    first = [
        *(decision(StatusWrite, other, status=status("Running", 1)) for other in others),
        decision(StatusWrite, job, status=status("Running", 1)),
    ]
    later = [decision(StatusWrite, job, status=status("Running", n)) for n in (2, 3)]
    await produce(kafka_settings, first, partition=0)
    slow = ActuatorService(kube=kube, kafka=kafka_settings, group_id="actuator", qps=0.5, burst=1)
    async with running(slow) as actuator:
        await until(lambda: actuator.counters.applied >= 1)  # the first token spent
        await produce(kafka_settings, later, partition=0)
        await until(lambda: handled(actuator) == len(first) + len(later))
        await until(lambda: actuator.in_flight == 0)
    path = f"{job_path(job)}/status"
    assert sim_cluster.faults.writes[f"PUT {path}"] == 1
    assert actuator.counters.coalesced == 2
    assert (await read(kube, job_path(job)))["status"]["running"] == 3


async def test_a_pending_jobs_write_that_waited_for_the_budget_lets_running_go_in_its_place(
    sim_cluster: SimulatedCluster, kube: Kube, kafka_settings: KafkaSettings
) -> None:
    """The Job shows Pending; its pods' counts wait for the budget behind two other jobs'
    writes, while more counts and then Running are decided. When the turn comes the
    Running status goes in its place, and the count between, left out with it, is not
    written after it: the Job never shows Pending again."""
    others = [await submit(kube, name=f"other-{n}") for n in range(2)]
    job = await submit(kube, name="counted")
    initiated = decision(StatusWrite, job, status=status("Pending", 0))
    first = [
        *(decision(StatusWrite, other, status=status("Running", 1)) for other in others),
        decision(StatusWrite, job, status=status("Pending", 1)),
    ]
    later = [
        decision(StatusWrite, job, status=status("Pending", 2)),
        decision(StatusWrite, job, status=status("Running", 3)),
    ]
    slow = ActuatorService(
        kube=kube, kafka=kafka_settings, group_id="actuator", qps=0.5, burst=1, status_hold=0.0
    )
    path = f"PUT {job_path(job)}/status"
    async with running(slow) as actuator:
        await produce(kafka_settings, [initiated], partition=0)
        await until(lambda: sim_cluster.faults.writes[path] == 1)  # shown, the token spent
        await produce(kafka_settings, first, partition=0)
        # the others' writes made: the job's waits for the next turn, 2 s away
        await until(
            lambda: all(sim_cluster.faults.writes[f"PUT {job_path(o)}/status"] for o in others)
        )
        await produce(kafka_settings, later, partition=0)
        await until(lambda: handled(actuator) == 1 + len(first) + len(later))
        await until(lambda: actuator.in_flight == 0)
    assert sim_cluster.faults.writes[path] == 2
    assert (await read(kube, job_path(job)))["status"]["state"]["phase"] == "Running"
    assert (await read(kube, job_path(job)))["status"]["running"] == 3


async def test_a_pending_jobs_count_writes_wait_for_its_next_sync(
    sim_cluster: SimulatedCluster, kube: Kube, kafka_settings: KafkaSettings
) -> None:
    """An idle actuator: the Job initiated (its PodGroup), its pods created once the
    PodGroup is admitted, its pods starting one by one, then Running, each decided after
    the one before was carried out. The initiated write (a phase change) is made at once;
    each later Pending write waits for the next, which replaces it, the Running write
    too (the Job shows Pending already): two writes where they would be five, each phase
    written as it comes."""
    job = await submit(kube)
    pending = status("Pending", 0)
    initiated = msgspec.structs.replace(pending, pending=0)
    podgroup = decision(PodGroupCreate, job, podgroup="pg", min_member=3, queue="default")
    steps: list[list[AnyDecision]] = [
        [podgroup, decision(StatusWrite, job, status=initiated)],
        [tf_pods(job), decision(StatusWrite, job, status=pending)],
        [decision(StatusWrite, job, status=status("Pending", 1))],
        [decision(StatusWrite, job, status=status("Pending", 2))],
        [decision(StatusWrite, job, status=status("Running", 3))],
    ]
    writes = f"PUT {job_path(job)}/status"
    done = [
        lambda: sim_cluster.faults.writes[writes] == 1,  # the phase written at once
        lambda: sim_cluster.api_calls["create pods"] == 3,
        lambda: True,
        lambda: True,
        lambda: True,
    ]
    # long enough that this test's own pace (a busy machine) makes no difference
    async with running(service(kube, kafka_settings, "actuator", status_hold=10.0)) as actuator:
        await until(lambda: actuator.ready)
        for step, carried_out in zip(steps, done, strict=True):
            await produce(kafka_settings, step, partition=0)
            await until(carried_out)
        total = sum(len(step) for step in steps)
        await until(lambda: handled(actuator) == total)
        await until(lambda: actuator.in_flight == 0)
    assert sim_cluster.faults.writes[writes] == 2
    assert (await read(kube, job_path(job)))["status"]["running"] == 3


async def test_while_the_actuator_is_behind_the_initiated_status_waits_for_the_pods_counts(
    sim_cluster: SimulatedCluster, kube: Kube, kafka_settings: KafkaSettings
) -> None:
    """One turn, taken by another Job's write that the API server holds: when it comes
    back the Job's PodGroup is created, and the turn goes on to a third Job waiting for
    it, so the initiated status waits (taking no turn) instead of queueing for one. The
    pods' counts, decided once the PodGroup is admitted, replace it: one status write
    where an idle actuator makes two."""
    busy, other, job = [await submit(kube, name=name) for name in ("busy", "other", "tf")]
    sim_cluster.faults.hold(job_path(busy))
    actuator = ActuatorService(
        kube=kube,
        kafka=kafka_settings,
        group_id="actuator",
        qps=1000,
        burst=1000,
        concurrency=1,
        initiated_hold=600.0,
    )
    podgroup = decision(PodGroupCreate, job, podgroup="pg", min_member=3, queue="default")
    writes = f"PUT {job_path(job)}/status"
    async with running(actuator):
        await until(lambda: actuator.ready)
        running_write = decision(StatusWrite, busy, status=status("Running", 3))
        await produce(kafka_settings, [running_write], partition=0)
        await until(lambda: sim_cluster.faults.writes[f"PUT {job_path(busy)}/status"] == 1)
        initiated = decision(StatusWrite, job, status=initiated_status())
        other_write = decision(StatusWrite, other, status=status("Running", 3))
        await produce(kafka_settings, [podgroup, initiated, other_write], partition=0)
        await until(lambda: actuator.in_flight == 4)  # every lane waits for the one turn
        sim_cluster.faults.release(job_path(busy))
        await until(lambda: sim_cluster.faults.writes[f"PUT {job_path(other)}/status"] == 1)
        await until(lambda: actuator.in_flight == 1)
        assert sim_cluster.api_calls["create podgroups"] == 1
        assert sim_cluster.faults.writes[writes] == 0  # the initiated status waits
        # the pods' creates wait at the API server until their counts are received too
        sim_cluster.faults.hold(pods_path())
        counts = decision(StatusWrite, job, status=status("Pending", 0))
        await produce(kafka_settings, [tf_pods(job), counts], partition=0)
        await until(lambda: actuator.in_flight == 3)
        sim_cluster.faults.release(pods_path())
        await until(lambda: actuator.in_flight == 0)
    assert sim_cluster.api_calls["create pods"] == 3
    assert sim_cluster.faults.writes[writes] == 1
    assert (await read(kube, job_path(job)))["status"]["pending"] == 3


async def test_a_lane_waiting_for_its_turn_keeps_one_write_of_a_phase(
    sim_cluster: SimulatedCluster, kube: Kube, kafka_settings: KafkaSettings
) -> None:
    """One turn, taken by another Job's write that the API server holds: the Job's
    Running writes decided meanwhile (a pod's start each) leave its lane as the next one
    comes, done at once rather than at its turn, so what waits is one write (memory and
    the decisions in flight, which bound the fetching, stay small in a backlog). The last
    is the one written."""
    busy, job = [await submit(kube, name=name) for name in ("busy", "tf")]
    sim_cluster.faults.hold(job_path(busy))
    actuator = ActuatorService(
        kube=kube, kafka=kafka_settings, group_id="actuator", qps=1000, burst=1000, concurrency=1
    )
    async with running(actuator):
        await until(lambda: actuator.ready)
        await produce(kafka_settings, [decision(StatusWrite, busy, status=status("Running", 3))], 0)
        await until(lambda: sim_cluster.faults.writes[f"PUT {job_path(busy)}/status"] == 1)
        starts = [decision(StatusWrite, job, status=status("Running", n)) for n in (1, 2, 3)]
        await produce(kafka_settings, starts, partition=0)
        await until(lambda: actuator.counters.coalesced == 2)
        assert actuator.in_flight == 2  # the held write and the job's last
        sim_cluster.faults.release(job_path(busy))
        await until(lambda: actuator.in_flight == 0)
    assert sim_cluster.faults.writes[f"PUT {job_path(job)}/status"] == 1
    assert (await read(kube, job_path(job)))["status"]["running"] == 3


async def test_a_held_status_write_is_made_within_the_hold_and_not_lost_at_a_restart(
    sim_cluster: SimulatedCluster, kube: Kube, kafka_settings: KafkaSettings
) -> None:
    """A Pending Job's count write whose next sync does not come (a gang left waiting)
    waits no longer than the hold; stopped while it waits, it is not committed, and the
    next member makes it."""
    job = await submit(kube)
    await produce(kafka_settings, [decision(StatusWrite, job, status=status("Pending", 0))], 0)
    group = "actuator"
    async with running(service(kube, kafka_settings, group, status_hold=600.0)) as first:
        await until(lambda: first.counters.applied == 1)  # a phase change: at once
        count = decision(StatusWrite, job, status=status("Pending", 1))
        ends = await produce(kafka_settings, [count], partition=0)
        await until(lambda: first.in_flight == 1)
    assert sim_cluster.api_calls["update jobs/status"] == 1
    assert (await committed(kafka_settings, group)).get(0, 0) < ends[0]
    async with running(service(kube, kafka_settings, group, status_hold=0.5)) as second:
        await until(lambda: second.counters.applied == 1)
        await until_async(lambda: _equals(progress(kafka_settings, group, 0), Progress(ends[0])))
    assert sim_cluster.api_calls["update jobs/status"] == 2
    assert (await read(kube, job_path(job)))["status"]["running"] == 1


async def test_another_decision_under_the_same_id_is_carried_out(
    kube: Kube, kafka_settings: KafkaSettings
) -> None:
    """Ids are the decider's, derived from their cause; a cause seen again later (a pod
    listing that shows the same pods: the same id) can lead to other decisions under the
    same ids. Only a copy of the same message is a repeat."""
    job = await submit(kube)
    first = decision(StatusWrite, job, status=status("Pending", 0))
    other = msgspec.structs.replace(first, status=status("Running", 3))
    group = "actuator"
    async with running(service(kube, kafka_settings, group)) as actuator:
        await produce(kafka_settings, [first], partition=0)
        await until(lambda: actuator.counters.applied == 1)
        await produce(kafka_settings, [first, other], partition=0)
        await until(lambda: actuator.counters.applied == 2)
    assert actuator.counters.repeated == 1
    assert (await read(kube, job_path(job)))["status"]["state"]["phase"] == "Running"


async def test_a_status_write_a_kill_waits_behind_goes_at_the_kills_priority(
    sim_cluster: SimulatedCluster, kube: Kube, kafka_settings: KafkaSettings
) -> None:
    """Budget for one call a second: four jobs' status writes, then one whose kill must
    follow its status write (the decider orders a new version's kills so). That status
    write goes first among them, at the priority of the pod work behind it, not last."""
    others = [await submit(kube, name=f"other-{n}") for n in range(4)]
    restarted = await submit(kube, name="restarted")
    stream: list[AnyDecision] = [
        *(decision(StatusWrite, job, status=status("Running", 1)) for job in others),
        decision(StatusWrite, restarted, status=status("Restarting", 0, retries=1)),
        decision(PodsKill, restarted, reason="RestartJob", pods=()),
    ]
    await produce(kafka_settings, stream, partition=0)
    slow = ActuatorService(kube=kube, kafka=kafka_settings, group_id="actuator", qps=1, burst=1)
    async with running(slow) as actuator:
        await until(lambda: handled(actuator) == len(stream))
    writes = [w.split(" ", 1)[1] for w in sim_cluster.faults.writes if w.endswith("/status")]
    assert writes.index(f"{job_path(restarted)}/status") <= 1, writes


@pytest.mark.parametrize("progress_read_delay", [0.0, 2.0], ids=["progress-read-at-once", "slow"])
async def test_a_crash_behind_one_slow_decision_repeats_only_that_jobs_writes(
    sim_cluster: SimulatedCluster,
    kube: Kube,
    kafka_settings: KafkaSettings,
    monkeypatch: pytest.MonkeyPatch,
    progress_read_delay: float,
) -> None:
    """One job's status write hangs while four other jobs' lifecycles, after it on the same
    partition, are carried out; the actuator is then killed. Its successor writes again
    only what was in flight: the slow job's status, none of the others' writes. Also when
    the successor reads the progress log slowly (a loaded broker): the partition's messages
    the consumer hands out meanwhile wait for it."""
    slow = await submit(kube, name="slow")
    jobs = [await submit(kube, name=f"tf-{n}") for n in range(4)]
    stream = [
        decision(StatusWrite, slow, status=status("Pending", 0)),
        *(d for step in zip(*map(lifecycle, jobs), strict=True) for d in step),
    ]
    sim_cluster.faults.hold(job_path(slow))
    ends = await produce(kafka_settings, stream, partition=0)
    group = "actuator"
    others_done = Progress(0, tuple(range(1, ends[0])))

    async def others_committed() -> bool:
        return await progress(kafka_settings, group, 0) == others_done

    environment = os.environ | {
        env_var(field.name): str(getattr(kafka_settings, field.name))
        for field in dataclasses.fields(kafka_settings)
    }
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.actuator.actuator_process",
        str(sim_cluster.kubeconfig_path),
        group,
        env=environment,
    )
    try:
        await until_async(others_committed)
    finally:
        child.send_signal(signal.SIGKILL)
        await child.wait()
    before = Counter(sim_cluster.faults.writes)
    # held: its read, or (the Jobs listed at the takeover) its status write, never made
    assert {w for w in before if job_path(slow) in w} <= {f"PUT {job_path(slow)}/status"}

    sim_cluster.faults.release(job_path(slow))
    read_progress = ProgressLog.last

    async def slow_read(log: ProgressLog, partitions: Iterable[int]) -> dict[int, Progress]:
        await asyncio.sleep(progress_read_delay)
        return await read_progress(log, partitions)

    monkeypatch.setattr(ProgressLog, "last", slow_read)
    async with running(service(kube, kafka_settings, group)) as successor:
        await until(lambda: successor.counters.applied >= 1)
        await until_async(lambda: _equals(progress(kafka_settings, group, 0), Progress(ends[0])))
    again = Counter(sim_cluster.faults.writes) - before
    assert {write.split(" ", 1)[1] for write in again} == {f"{job_path(slow)}/status"}
    assert successor.counters.applied == 1
    assert (await read(kube, job_path(slow)))["status"]["state"]["phase"] == "Pending"
    running_counts = (await cluster_state(kube, jobs))["running"]
    assert running_counts == {f"tf-{n}": 3 for n in range(4)}


async def _equals(found: Awaitable[Progress | None], expected: Progress) -> bool:
    return await found == expected


async def test_a_takeover_carries_out_nothing_before_the_jobs_are_listed(
    sim_cluster: SimulatedCluster, kube: Kube, kafka_settings: KafkaSettings
) -> None:
    """The API server is slow to answer the list of Jobs: the partition's decisions wait
    for it rather than read their Job one by one meanwhile."""
    job = await submit(kube)
    generation = job["metadata"]["generation"]
    stream = [  # as the decider makes them: the creates say which spec they were made from
        msgspec.structs.replace(d, job_generation=generation)
        if isinstance(d, PodGroupCreate | PodsCreate)
        else d
        for d in lifecycle(job)
    ]
    await produce(kafka_settings, stream, partition=0)
    jobs = "/apis/batch.volcano.sh/v1alpha1/"
    sim_cluster.faults.hold(jobs)  # the list, and any read or write of a Job
    async with running(service(kube, kafka_settings, "actuator")) as actuator:
        # ready once the partitions are taken over: here, not before the list
        with suppress(TimeoutError):
            await until(lambda: actuator.ready, within=3.0)
        await asyncio.sleep(1.0)  # time enough for the decisions to be fetched
        assert handled(actuator) == 0
        sim_cluster.faults.release(jobs)
        await until(lambda: handled(actuator) == len(stream))
    assert sim_cluster.api_calls["get jobs"] == 0


async def test_decisions_delivered_in_this_process_are_carried_out_without_a_fetch(
    kube: Kube, kafka_settings: KafkaSettings
) -> None:
    """The decider's decisions, delivered in the actuator's process, are carried out while
    its consumer fetches nothing; the copies the fetch then brings are not done again, and
    its fetches then wait the longer wait of a consumer fed here."""
    job = await submit(kube, name="tf-here")
    first, *rest = lifecycle(job)
    topic = topic_name(kafka_settings, DECISIONS)
    local = LocalDelivery()
    actuator = service(kube, kafka_settings, "actuator", local=local)
    async with running(actuator), create_producer(kafka_settings) as producer:
        batches = PartitionBatches(producer, topic, local=local)
        await batches.prepare()

        async def deliver(decisions: list[AnyDecision]) -> None:
            for made in decisions:
                batches.add(made.key.encode(), encode(made))
            await asyncio.gather(*await batches.flush())

        # the first comes through the fetch: it tells the actuator where the partition is
        await deliver([first])
        await until(lambda: handled(actuator) == 1)
        consumer = actuator.consumer
        assert consumer is not None
        consumer.pause(*consumer.assignment())
        await deliver(rest)
        await until(lambda: handled(actuator) == len(rest) + 1)
        state = await cluster_state(kube, [job])

        consumer.resume(*consumer.assignment())
        await until_fetched(consumer)
        await asyncio.sleep(0.5)  # anything carried out twice would be under way by now
        assert handled(actuator) == len(rest) + 1
        # fed here, its fetches bring copies only: they wait longer (`FetchPace`)
        local_wait = kafka_settings.fetch_max_wait_local_ms / 1000
        await until(lambda: actuator.gauges()["fetch_wait_seconds"] == local_wait)
    assert (actuator.counters.failed, actuator.counters.delivered_here) == (0, len(rest))
    assert state["pods"] == [f"tf-here-{t}" for t in ("ps-0", "worker-0", "worker-1")]
    assert state["running"] == {"tf-here": 3}
