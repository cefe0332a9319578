"""The Event recorder on the simulated cluster: Events written in order off the lanes,
counted into one when alike, dropped beyond its capacity, left to the next owner when
their partition goes."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import AsyncIterator
from typing import Any

import msgspec
import pytest
import pytest_asyncio
from structlog.testing import capture_logs

from lavalog.controller.actuator.core.job_events import Notice, event_manifest
from lavalog.controller.actuator.service.client import Api
from lavalog.controller.actuator.service.counters import Counters
from lavalog.controller.actuator.service.ratelimit import RateLimiter, TokenBucket
from lavalog.controller.actuator.service.recorder import DROPS_LOGGED_EVERY, EventRecorder
from lavalog.controller.kube import Kube
from lavalog.events.decisions import PhaseChanged
from lavalog.simulator.server import SimulatedCluster
from tests.actuator.conftest import FAST_RETRIES
from tests.actuator.support import EVENTS, decision, events_of, items, submit

pytestmark = pytest.mark.integration


@pytest.fixture
def api(kube: Kube, counters: Counters) -> Api:
    limiter = RateLimiter(TokenBucket(qps=10_000, burst=10_000), concurrency=8)
    return Api(kube, limiter, counters, delays=FAST_RETRIES)


@pytest_asyncio.fixture
async def job(kube: Kube) -> dict[str, Any]:
    return await submit(kube)


def manifest(job: dict[str, Any], n: int, message: str = "boom") -> dict[str, Any]:
    made = msgspec.structs.replace(
        decision(PhaseChanged, job, previous="", phase="Pending"), id=f"d{n}"
    )
    return event_manifest(made, Notice("Warning", "FailedCreate", message))


@pytest_asyncio.fixture
async def writing(api: Api, counters: Counters) -> AsyncIterator[EventRecorder]:
    recorder = EventRecorder(api, counters)
    writer = asyncio.create_task(recorder.run())
    yield recorder
    writer.cancel()
    await asyncio.gather(writer, return_exceptions=True)


async def test_an_event_alike_one_written_is_counted_into_it(
    kube: Kube, job: dict[str, Any], writing: EventRecorder, counters: Counters
) -> None:
    done: list[int] = []
    for n in range(3):
        writing.record([manifest(job, n)], done=functools.partial(done.append, n))
    await writing.idle()

    [event] = events_of(await items(kube, EVENTS), job)
    assert (event["count"], event["message"]) == (3, "boom")
    assert done == [0, 1, 2]
    assert counters.events_dropped == counters.events_filtered == 0


async def test_beyond_its_capacity_a_new_event_is_dropped_and_its_decision_done(
    kube: Kube, job: dict[str, Any], api: Api, counters: Counters
) -> None:
    recorder = EventRecorder(api, counters, capacity=2)
    done: list[int] = []
    for n in range(3):
        recorder.record([manifest(job, n, f"m{n}")], done=functools.partial(done.append, n))
    assert done == [2]  # dropped at once, and done: an Event is a hint, the log the record
    assert counters.events_dropped == 1
    writer = asyncio.create_task(recorder.run())
    await recorder.idle()
    writer.cancel()
    assert sorted(e["message"] for e in events_of(await items(kube, EVENTS), job)) == ["m0", "m1"]
    assert done == [2, 0, 1]


async def test_events_dropped_are_each_counted_and_logged_a_line_per_interval(
    job: dict[str, Any], api: Api, counters: Counters
) -> None:
    now = [100.0]
    recorder = EventRecorder(api, counters, capacity=1, clock=lambda: now[0])
    recorder.record([manifest(job, 0, "kept")])
    with capture_logs() as logs:
        for n in range(1, 6):  # the queue is full: each is dropped
            recorder.record([manifest(job, n, f"m{n}")])
        now[0] += DROPS_LOGGED_EVERY
        recorder.record([manifest(job, 6, "m6")])
    assert counters.events_dropped == 6
    dropped = [line for line in logs if line["event"] == "events dropped: too many waiting"]
    assert [(line["dropped"], line["seconds"]) for line in dropped] == [
        (1, None),
        (5, DROPS_LOGGED_EVERY),
    ]


async def test_events_of_a_partition_handed_over_are_left_undone(
    kube: Kube, job: dict[str, Any], api: Api, counters: Counters
) -> None:
    recorder = EventRecorder(api, counters)
    done: list[str] = []
    kept, gone = manifest(job, 1, "kept"), manifest(job, 2, "gone")
    recorder.record([kept], group="p0", done=lambda: done.append("kept"), decision="d1")
    recorder.record([gone], group="p1", done=lambda: done.append("gone"), decision="d2")
    assert [decision for decision, _ in recorder.forget({"p1"})] == ["d2"]
    writer = asyncio.create_task(recorder.run())
    await recorder.idle()
    writer.cancel()
    assert done == ["kept"]
    assert [e["message"] for e in events_of(await items(kube, EVENTS), job)] == ["kept"]


async def test_an_event_the_api_server_holds_up_holds_up_only_its_own_objects_events(
    kube: Kube, sim_cluster: SimulatedCluster, writing: EventRecorder, counters: Counters
) -> None:
    """Job a's second Event is counted into its first (a patch of it), and the API server
    holds that patch: job b's Event, recorded after it, is written meanwhile; a's third
    waits for a's second, and all of a's end counted into one."""
    a, b = await submit(kube, name="a"), await submit(kube, name="b")
    first = manifest(a, 0)
    writing.record([first])
    await writing.idle()
    sim_cluster.faults.hold(first["metadata"]["name"])
    done: list[str] = []
    b_written = asyncio.Event()

    def b_done() -> None:
        done.append("b0")
        b_written.set()

    writing.record([manifest(a, 1)], done=lambda: done.append("a1"))
    writing.record([manifest(b, 0)], done=b_done)
    writing.record([manifest(a, 2)], done=lambda: done.append("a2"))
    async with asyncio.timeout(30):
        await b_written.wait()
    assert done == ["b0"]
    assert writing.waiting() == 2
    sim_cluster.faults.release(first["metadata"]["name"])
    await writing.idle()
    assert done == ["b0", "a1", "a2"]
    [counted] = events_of(await items(kube, EVENTS), a)
    assert counted["count"] == 3
    assert len(events_of(await items(kube, EVENTS), b)) == 1
