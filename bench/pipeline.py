"""Pipeline through Kafka: observed -> decider service -> decisions -> actuator -> API server.

    python bench/pipeline.py [--events 100000] [--jobs 1000] [--partitions 12] [--decider-only]

The log is `bench/decider.py`'s: ps/worker jobs whose workers fail and are restarted,
round-robin interleaved, about `--events / --jobs` observations each, for Jobs that
exist in a simulated cluster (`lavalog sim`, its own process, no nodes: an API server).
It is produced to `lavalog.observed` first; then, on the same broker:

1. baseline: a raw aiokafka consumer reads the observations (no decoding);
2. the `DeciderService` consumes them to the end, producing its decisions (the rate is
   observations decided per second, from partition assignment to the last one);
3. a raw aiokafka consumer reads the decisions (checks they all landed; baseline of 4);
4. the `ActuatorService` carries the decisions out against the API server (rate limit
   raised), from group join to the last one done.

The stages run one after another, each alone, because the actuator (one API call or more
per decision) is an order of magnitude slower than the decider: run together, the
decider's rate would be the actuator's. Target (docs/benchmarks.md): the decider consumes at
>= 50% of the raw aiokafka rate measured in the same run.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import msgspec

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.decider import job_spec, lifecycle_script
from bench.harness import (
    bounded,
    kafka_settings,
    run_benchmark,
    say,
    simulator_process,
    table,
    until,
)
from lavalog.controller.actuator.service.runner import ActuatorService
from lavalog.controller.broker import DevelopmentBroker
from lavalog.controller.decider.service.runner import DeciderService
from lavalog.controller.kafka import (
    KafkaSettings,
    create_consumer,
    create_producer,
    ensure_topics,
    topic_name,
)
from lavalog.controller.kube import Kube, connect
from lavalog.controller.logs import configure_logging
from lavalog.events.codec import encode
from lavalog.events.topics import DECISIONS, OBSERVED

NAMESPACE = "pipeline"


def lifecycle(name: str, uid: str, length: int) -> Iterator[tuple[bytes, bytes]]:
    """`bench/decider.py`'s job lifecycle for a Job that exists, under its real uid."""
    script = lifecycle_script(name, NAMESPACE, length, uid=uid)
    yield from ((event.key.encode(), encode(event)) for event in script.events)


async def create_jobs(kube: Kube, count: int) -> list[str]:
    """The Jobs the log is about; their uids."""
    await kube.request("POST", "/api/v1/namespaces", body={"metadata": {"name": NAMESPACE}})
    path = f"/apis/batch.volcano.sh/v1alpha1/namespaces/{NAMESPACE}/jobs"
    uids = [""] * count

    async def create(index: int) -> None:
        manifest = {
            "apiVersion": "batch.volcano.sh/v1alpha1",
            "kind": "Job",
            "metadata": {"name": f"train-{index}", "namespace": NAMESPACE},
            "spec": job_spec(),
        }
        created = await kube.request("POST", path, body=manifest)
        uids[index] = str(msgspec.json.decode(created)["metadata"]["uid"])

    await bounded(count, 32, create)
    return uids


def generate(uids: list[str], events: int) -> list[tuple[bytes, bytes]]:
    """(key, value) of every observation, the jobs' lifecycles interleaved round-robin."""
    per_job = events // len(uids)
    streams = [lifecycle(f"train-{i}", uid, per_job) for i, uid in enumerate(uids)]
    return [m for batch in itertools.zip_longest(*streams) for m in batch if m is not None]


async def produce(settings: KafkaSettings, messages: list[tuple[bytes, bytes]]) -> float:
    topic = topic_name(settings, OBSERVED)
    started = time.perf_counter()
    async with create_producer(settings) as producer:
        pending = []
        for key, value in messages:
            pending.append(await producer.send(topic, value, key=key))
            if len(pending) >= 20_000:
                await asyncio.gather(*pending)
                pending.clear()
        await asyncio.gather(*pending)
    return time.perf_counter() - started


class Spent(NamedTuple):
    """Seconds a stage took, and the CPU seconds this process spent meanwhile (the machine's
    load moves them less than the wall clock: a stage runs alone in this process)."""

    wall: float
    cpu: float

    @classmethod
    def since(cls, wall: float, cpu: float) -> Spent:
        return cls(time.perf_counter() - wall, time.process_time() - cpu)


async def consume_raw(settings: KafkaSettings, base: str, count: int) -> Spent:
    """The time a plain aiokafka consumer takes to read `count` messages of a topic."""
    consumer = create_consumer(settings, group_id=None, max_poll_records=10_000)
    consumer.subscribe([topic_name(settings, base)])
    await consumer.start()
    seen = 0
    started = time.perf_counter(), time.process_time()
    try:
        while seen < count:
            for messages in (await consumer.getmany(timeout_ms=500)).values():
                seen += len(messages)
        return Spent.since(*started)
    finally:
        await consumer.stop()


async def timed(
    run: Callable[[], Any], started: Callable[[], bool], finished: Callable[[], bool], what: str
) -> Spent:
    """Run a service until `finished()`; the time from `started()` (its group joined) on."""
    task = asyncio.create_task(run())
    try:
        await until(started)
        began = last = time.perf_counter()
        cpu = time.process_time()
        while not finished():
            await asyncio.sleep(0.001)
            if time.perf_counter() - last > 5:
                last = time.perf_counter()
                say(f"  {what}: {last - began:5.1f} s")
            if task.done():
                task.result()
        return Spent.since(began, cpu)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def main(args: argparse.Namespace) -> None:
    configure_logging(level="warning", json=False)
    async with DevelopmentBroker() as broker:
        settings = kafka_settings(broker.bootstrap_servers, args.partitions)
        await ensure_topics(settings)
        async with (
            simulator_process(nodes=0, pods_per_node=0, time_scale=1.0, history=1_000_000) as sim,
            connect(str(sim.kubeconfig)) as kube,
        ):
            started = time.perf_counter()
            uids = await create_jobs(kube, args.jobs)
            messages = generate(uids, args.events)
            count = len(messages)
            say(
                f"{args.jobs:,} Jobs created, {count:,} observations generated "
                f"in {time.perf_counter() - started:.1f} s"
            )
            produced = await produce(settings, messages)
            say(f"produced to {args.partitions} partitions in {produced:.1f} s; consuming")
            raw_observed = await consume_raw(settings, OBSERVED, count)

            decider = DeciderService(kafka=settings, group_id="bench-decider")
            decided = await timed(
                decider.run,
                lambda: bool(decider.assigned),
                # decided, their decisions delivered and the input committed
                lambda: (
                    decider.counters["observations"] >= count and not any(decider.lag().values())
                ),
                "decider",
            )
            decisions = decider.counters["decisions"]
            raw_rate = count / raw_observed.wall
            say(
                f"{decisions:,} decisions; decider service {count / decided.wall:,.0f}/s, "
                f"{count / decided.wall / raw_rate:.0%} of raw; reading them back"
            )
            raw_decisions = (await consume_raw(settings, DECISIONS, decisions)).wall
            rows = [
                row("produce observations (setup, aiokafka)", count, produced),
                row("baseline: raw aiokafka consume, observed", count, raw_observed.wall),
                row("decider service: observed -> decisions", count, decided.wall, raw_rate),
                row("baseline: raw aiokafka consume, decisions", decisions, raw_decisions),
            ]
            if not args.decider_only:
                rows += await actuate(kube, settings, count, decisions, raw_rate, raw_decisions)

    table(["pipeline", "messages", "seconds", "per second", "of raw"], rows)
    raw_cpu, decider_cpu = raw_observed.cpu / count * 1e6, decided.cpu / count * 1e6
    say(
        f"CPU of this process per observation: raw consume {raw_cpu:.1f} us, decider service "
        f"{decider_cpu:.1f} us ({raw_cpu / decider_cpu:.0%} of raw by CPU)"
    )
    say("target: decider service >= 50% of the raw aiokafka consume rate")


async def actuate(
    kube: Kube,
    settings: KafkaSettings,
    count: int,
    decisions: int,
    raw_rate: float,
    raw_decisions: float,
) -> list[list[str]]:
    """Stage 4: the actuator carries the decisions out; its rows of the table."""
    actuator = ActuatorService(
        kube=kube, kafka=settings, group_id="bench-actuator", qps=1e6, burst=1_000_000
    )
    counters = actuator.counters

    def done() -> bool:
        return counters.handled >= decisions

    spent = await timed(actuator.run, lambda: actuator.ready, done, "actuator")
    applied = spent.wall
    say(
        f"actuator: {counters.applied:,} applied, {counters.coalesced:,} coalesced, "
        f"{counters.skipped:,} skipped, {counters.ignored:,} ignored, "
        f"{counters.failed:,} failed, {counters.retried:,} calls retried; "
        f"{spent.cpu / decisions * 1e6:.0f} us of this process's CPU per decision"
    )
    return [
        row(
            "actuator service: decisions -> API writes",
            decisions,
            applied,
            decisions / raw_decisions,
        ),
        row("actuator service, as observations per second", count, applied, raw_rate),
    ]


def row(what: str, items: int, seconds: float, of: float | None = None) -> list[str]:
    rate = items / seconds
    ratio = "" if of is None else f"{rate / of:.0%}"
    return [what, f"{items:,}", f"{seconds:.2f}", f"{rate:,.0f}", ratio]


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000, help="observations in the log")
    parser.add_argument("--jobs", type=int, default=1_000)
    parser.add_argument("--partitions", type=int, default=12)
    parser.add_argument(
        "--decider-only",
        action="store_true",
        help="stop after the decider's stage and its baselines (the actuator's takes longest)",
    )
    return parser.parse_args()


if __name__ == "__main__":
    run_benchmark(main(parse()))
