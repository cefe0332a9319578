"""Scale-out: the same burst of one-pod Volcano Jobs carried out by 1 and by N controller
replicas, each on a fresh broker and a fresh simulated cluster, in one run.

    python bench/scaleout.py [--replicas 1,2,4] [--jobs 2000] [--partitions 12]

Each replica is a whole controller (`run_controller` in a child process). One of them
holds the leader Lease and runs the watchers, so every observation passes through one
process; the deciders and actuators split the `lavalog.observed` and `lavalog.decisions`
partitions between the replicas through their consumer groups. Per replica count it
prints the seconds until every pod exists and every Job is Running, and the ratio
against 1 replica from the same run (the baseline); the observations the leader's
watchers published per second (by the timestamps of the records on `lavalog.observed`:
mean and busiest second); each replica's CPU seconds (from /proc) and the observations
its decider took. With N > 1, the leader's CPU beyond its own share of deciding and
acting (at the followers' CPU per observation decided) is what watching cost, so the
watchers' CPU per observation, and with it the observations/s one leader's watchers can
publish on one core, follow from the same run. Throughput ratios need as many free cores
as processes: on a 2-core machine the replicas, the broker and the simulated cluster
share two, and the CPU per process is the part that does not depend on the machine.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from collections import Counter
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.harness import (
    ControllerChild,
    controller_process,
    kafka_settings,
    metric,
    metric_series,
    read_topic,
    run_benchmark,
    say,
    simulator_process,
    table,
)
from bench.scale import NAMESPACE, Progress, submit_jobs
from lavalog.controller.broker import DevelopmentBroker
from lavalog.controller.kafka import ensure_topics
from lavalog.controller.kube import connect
from lavalog.events.topics import OBSERVED


@dataclass(frozen=True, kw_only=True)
class Replica:
    leader: bool
    cpu_seconds: float
    #: observations its decider took from its partitions
    observations: int


@dataclass(frozen=True, kw_only=True)
class Outcome:
    replicas: int
    #: seconds from the first submission until all pods, all Running
    pods: float
    running: float
    #: observations published to `lavalog.observed` until every Job was Running
    observed: int
    #: observations/s, from the first until every Job was Running, and in the busiest second
    mean_rate: float
    peak_rate: float
    members: list[Replica]

    @property
    def leader(self) -> Replica:
        return next(member for member in self.members if member.leader)

    @property
    def followers(self) -> list[Replica]:
        return [member for member in self.members if not member.leader]


def observed_rate(records: list[Any], *, since: float, until: float) -> tuple[int, float, float]:
    """The observations the leader's watchers published between `since` and `until` (wall
    clock s) by their records' timestamps (taken as each was added to its batch): count,
    mean per second from the first of them, and the highest in one second. (The
    development broker's ListOffsets is not exact, so the records themselves are read.)"""
    stamps = [r.timestamp / 1000 for r in records if since <= r.timestamp / 1000 <= until]
    if not stamps:
        return 0, 0.0, 0.0
    first = min(stamps)
    per_second = Counter(int(stamp - first) for stamp in stamps)
    return len(stamps), len(stamps) / max(until - first, 1e-9), float(max(per_second.values()))


async def balanced(controllers: list[ControllerChild], partitions: int) -> None:
    """Until each replica's decider holds partitions of its own and together all of them
    (the group has settled), and one replica leads the watchers."""
    async with asyncio.timeout(60):
        while True:
            held = [await _partitions_held(c.metrics) for c in controllers]
            leaders = [await metric(c.metrics, "lavalog_watchers_leader") for c in controllers]
            if all(held) and sum(held) == partitions and sum(leaders) == 1:
                return
            await asyncio.sleep(0.2)


async def _partitions_held(metrics: str) -> int:
    """Partitions of `lavalog.observed` the replica's decider holds (its lag's labels)."""
    return len(await metric_series(metrics, "lavalog_decider_lag"))


async def one_run(args: argparse.Namespace, replicas: int) -> Outcome:
    """The jobs on a fresh broker and cluster with `replicas` controllers."""
    nodes = -(-args.jobs // 250)
    async with DevelopmentBroker() as broker, AsyncExitStack() as stack:
        settings = kafka_settings(broker.bootstrap_servers, args.partitions)
        await ensure_topics(settings)
        cluster = await stack.enter_async_context(
            simulator_process(
                nodes=nodes,
                pods_per_node=250,
                time_scale=10.0,
                history=10 * 2 * args.jobs + 100_000,
            )
        )
        kube = await stack.enter_async_context(connect(str(cluster.kubeconfig)))
        await kube.request("POST", "/api/v1/namespaces", body={"metadata": {"name": NAMESPACE}})
        controllers = [
            await stack.enter_async_context(
                controller_process(
                    bootstrap=broker.bootstrap_servers,
                    kubeconfig=cluster.kubeconfig,
                    partitions=args.partitions,
                    qps=args.qps,
                    burst=args.burst,
                )
            )
            for _ in range(replicas)
        ]
        await balanced(controllers, args.partitions)
        say(f"\n{replicas} replica(s) ready and balanced; submitting {args.jobs:,} Jobs")
        cpu_before = [c.cpu_seconds() for c in controllers]
        decided_before = [
            await metric(c.metrics, "lavalog_decider_observations") for c in controllers
        ]
        reached: dict[str, float] = {}
        progress = Progress(args.jobs, args.jobs, on_goal=lambda goal: _at(reached, goal))
        since = time.time()
        times, _ = await submit_jobs(
            kube, args, Counter(), progress, [c.metrics for c in controllers], every=5.0
        )
        members = [
            Replica(
                leader=await metric(c.metrics, "lavalog_watchers_leader") == 1,
                cpu_seconds=c.cpu_seconds() - cpu,
                observations=int(await metric(c.metrics, "lavalog_decider_observations") - decided),
            )
            for c, cpu, decided in zip(controllers, cpu_before, decided_before, strict=True)
        ]
        records = await read_topic(settings, OBSERVED, args.partitions)
    observed, mean_rate, peak_rate = observed_rate(records, since=since, until=reached["running"])
    return Outcome(
        replicas=replicas,
        pods=times["pods"],
        running=times["running"],
        observed=observed,
        mean_rate=mean_rate,
        peak_rate=peak_rate,
        members=members,
    )


async def main(args: argparse.Namespace) -> None:
    outcomes = [await one_run(args, replicas) for replicas in args.replicas]
    report(args, outcomes)


def _at(reached: dict[str, float], goal: str) -> None:
    reached[goal] = time.time()


def report(args: argparse.Namespace, outcomes: list[Outcome]) -> None:
    base = next((o for o in outcomes if o.replicas == 1), outcomes[0])
    say(f"\nload average at the end: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    table(
        [
            f"scale-out, {args.jobs:,} one-pod Jobs",
            "all pods s",
            "all Running s",
            "speed-up",
            "observations",
            "obs/s mean",
            "obs/s peak",
        ],
        [
            [
                f"{o.replicas} replica(s)" + (" (baseline)" if o is base else ""),
                f"{o.pods:.1f}",
                f"{o.running:.1f}",
                f"{base.running / o.running:.2f}x",
                f"{o.observed:,}",
                f"{o.mean_rate:,.0f}",
                f"{o.peak_rate:,.0f}",
            ]
            for o in outcomes
        ],
    )
    table(
        ["CPU seconds until all Running", "leader", "followers (each)", "all", "ms per job"],
        [
            [
                f"{o.replicas} replica(s)",
                f"{o.leader.cpu_seconds:.1f}",
                " ".join(f"{f.cpu_seconds:.1f}" for f in o.followers) or "-",
                f"{sum(m.cpu_seconds for m in o.members):.1f}",
                f"{sum(m.cpu_seconds for m in o.members) / args.jobs * 1000:.1f}",
            ]
            for o in outcomes
        ],
    )
    table(
        ["observations decided", "leader", "followers (each)"],
        [
            [
                f"{o.replicas} replica(s)",
                f"{o.leader.observations:,}",
                " ".join(f"{f.observations:,}" for f in o.followers) or "-",
            ]
            for o in outcomes
        ],
    )
    for o in outcomes:
        if o.followers:
            say(watchers_cost(o, args.jobs))
    say(
        "\nOn a machine with fewer free cores than processes (replicas, broker, simulated "
        "cluster) the speed-up cannot exceed what the cores give; read the CPU per process."
    )


def watchers_cost(outcome: Outcome, jobs: int) -> str:
    """What watching cost the leader: its CPU beyond what the followers spent per
    observation they decided, for its own share of the decisions."""
    followers = outcome.followers
    per_decided = sum(f.cpu_seconds for f in followers) / max(
        sum(f.observations for f in followers), 1
    )
    watching = outcome.leader.cpu_seconds - per_decided * outcome.leader.observations
    if watching <= 0:
        return f"\n{outcome.replicas} replicas: the leader used no more CPU than its share"
    per_observation = watching / outcome.observed
    per_job = outcome.observed / jobs
    # each replica decides and acts on 1/N of the observations; the leader also watches
    ceiling = 1 / (per_observation + per_decided / outcome.replicas)
    return (
        f"\n{outcome.replicas} replicas: the leader's watchers cost {watching:.1f} CPU s "
        f"({per_observation * 1e6:,.0f} µs per observation, {per_job:.1f} observations per "
        f"Job), deciding and acting {per_decided * 1e6:,.0f} µs per observation; "
        f"a core per replica: at most {ceiling:,.0f} observations/s "
        f"({ceiling / per_job:,.0f} Jobs/s), the leader the busiest; one leader's watchers "
        f"alone: {1 / per_observation:,.0f} observations/s ({1 / per_observation / per_job:,.0f}"
        " one-pod Jobs/s)"
    )


def replica_counts(text: str) -> list[int]:
    """`--replicas 1,2,4`: positive whole numbers, comma-separated."""
    counts = [int(n) for n in text.split(",")]
    if any(n < 1 for n in counts):
        raise ValueError(text)
    return counts


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--replicas",
        type=replica_counts,
        default=[1, 2, 4],
        help="replica counts to run, comma-separated; 1 is the baseline (default 1,2,4)",
    )
    parser.add_argument("--jobs", type=int, default=2_000, help="one-pod Jobs per run")
    parser.add_argument("--qps", type=float, default=5_000.0, help="each actuator's API calls/s")
    parser.add_argument("--burst", type=int, default=10_000, help="each actuator's token bucket")
    parser.add_argument("--partitions", type=int, default=12, help="observed and decisions")
    args = parser.parse_args()
    args.pods_per_job, args.finish = 1, None
    return args


if __name__ == "__main__":
    run_benchmark(main(parse()))
