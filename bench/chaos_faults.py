"""The chaos run's faults: what can go wrong in a deployment, injected at random.

Two schedules. The default one injects `count` faults (every kind at least once) at
random moments while the jobs are submitted, so that they land on jobs in every stage,
then lets the jobs settle. The churn schedule keeps going until every job has finished: a
replica SIGKILLed every `kill_every` seconds (restarted in its pod, as its supervisor
would; every `new_identity_every`-th comes back as a new pod, a new identity), and a
cluster fault every `fault_every` seconds (watches dropped, history expired, 500s, 429s,
latency), each period drawn between half and one and a half times the given one.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import sys
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.chaos_workload import (
    COMMANDS,
    FINISHED,
    LIVE,
    NAMESPACE,
    Obj,
    Planned,
    View,
    call,
    job_of,
    phase_of,
    pod_phase,
    version_of,
)
from bench.harness import Cluster, LavalogRun
from lavalog.cli.commands.job import ACTIONS, command_object
from lavalog.controller.kafka import KafkaSettings, create_producer, topic_name
from lavalog.controller.kube import Kube
from lavalog.events import topics

NODES = 8
FAULTS = (
    "kill-one", "kill-both", "pause-broker", "api-500", "api-429", "api-latency",
    "watch-drop", "history-410", "node-loss", "evict", "poison",
)  # fmt: skip
#: the cluster faults of the churn schedule (the replicas are killed on their own clock)
CLUSTER_FAULTS = ("watch-drop", "history-410", "api-500", "api-429", "api-latency")
#: real seconds the API server takes longer to answer during an `api-latency` fault
LATENCY = 0.2


@dataclass(frozen=True)
class Churn:
    """The churn schedule: periods in seconds (0: that kind of fault is off)."""

    kill_every: float = 0.0
    fault_every: float = 0.0
    new_identity_every: int = 5

    def __bool__(self) -> bool:
        return bool(self.kill_every or self.fault_every)


@dataclass
class Faults:
    """The faults of one run, drawn from a seed, and what they did."""

    cluster: Cluster
    kube: Kube
    view: View
    broker_pid: int
    replicas: list[LavalogRun]
    kafka: KafkaSettings
    rng: random.Random
    planned: dict[str, Planned]
    pause_seconds: float
    done: Counter[str] = field(default_factory=Counter)
    #: (pod name, job version) -> times the faults removed such a pod
    removed: Counter[tuple[str, int]] = field(default_factory=Counter)
    #: jobs a node loss hit: their outcome depends on the moment
    node_lost: set[str] = field(default_factory=set)
    #: (partition, offset) of each undecodable message sent to lavalog.observed
    poison: set[tuple[int, int]] = field(default_factory=set)
    #: when a replica was SIGKILLed (`time.time()`)
    kills: list[float] = field(default_factory=list)
    #: replicas that exited on their own (not killed), with the end of their output
    died: list[str] = field(default_factory=list)
    #: jobs a node loss hit, still unfinished when the faults ended, terminated then
    terminated: list[str] = field(default_factory=list)
    _turn: int = 0
    _lost: set[str] = field(default_factory=set)
    #: replicas killed on purpose and not started again yet (the churn's kills run beside
    #: its cluster faults, whose `revive` must not take them for dead)
    _down: set[LavalogRun] = field(default_factory=set)

    def kinds(self) -> Iterator[str]:
        """Every kind once in a random order, then kinds drawn at random, without end."""
        first = list(FAULTS)
        self.rng.shuffle(first)
        yield from first
        while True:
            yield self.rng.choice(FAULTS)

    async def inject(self, count: int, submitted: asyncio.Event) -> None:
        """At least `count` faults (and every kind once), on until every job is submitted,
        so that they land on jobs in every stage."""
        if count == 0:
            return
        for kind in self.kinds():
            if sum(self.done.values()) >= max(count, len(FAULTS)) and submitted.is_set():
                return
            await asyncio.sleep(self.rng.uniform(0.5, 2.5))
            await self.revive()
            await getattr(self, "_" + kind.replace("-", "_"))()
            self.done[kind] += 1

    async def churn(self, schedule: Churn, finished: asyncio.Event) -> None:
        """The churn schedule, until `finished` is set."""
        loops = []
        if schedule.kill_every:
            loops.append(self._every(schedule.kill_every, finished, self._churn_kill(schedule)))
        if schedule.fault_every:
            loops.append(self._every(schedule.fault_every, finished, self._cluster_fault))
        await asyncio.gather(*loops)

    async def _every(
        self, period: float, finished: asyncio.Event, act: Callable[[], Awaitable[None]]
    ) -> None:
        while True:
            try:
                await asyncio.wait_for(finished.wait(), self.rng.uniform(0.5, 1.5) * period)
                return
            except TimeoutError:
                await self.revive()
                await act()

    def _churn_kill(self, schedule: Churn) -> Callable[[], Awaitable[None]]:
        async def kill() -> None:
            victim = self.replicas[self._turn % len(self.replicas)]
            self._turn += 1
            self._down.add(victim)
            victim.kill()
            self.kills.append(time.time())
            await asyncio.sleep(self.rng.uniform(0.5, 3.0))
            kind = "kill-one"
            if self._turn % schedule.new_identity_every == 0:  # a new pod: a new name
                victim.identity = f"{victim.identity.split('~')[0]}~{self._turn}"
                kind = "kill-new-identity"
            await victim.restart()
            self._down.discard(victim)
            self.done[kind] += 1

        return kill

    async def _cluster_fault(self) -> None:
        kind = self.rng.choice(CLUSTER_FAULTS)
        await getattr(self, "_" + kind.replace("-", "_"))()
        self.done[kind] += 1

    async def revive(self) -> None:
        """Start again, and count, each replica that exited without being killed."""
        for replica in self.replicas:
            if not replica.running and replica not in self._down:
                self.died.append(f"{replica.identity}: {replica.tail()[-600:]}")
                await replica.restart()

    async def _admin(self, method: str, path: str, body: Obj | None = None) -> None:
        async with (
            aiohttp.ClientSession() as http,
            http.request(method, f"{self.cluster.url}/sim/{path}", json=body) as answer,
        ):
            answer.raise_for_status()

    async def _kill_one(self) -> None:
        victim = self.replicas[self._turn % len(self.replicas)]
        self._turn += 1
        victim.kill()
        self.kills.append(time.time())
        await asyncio.sleep(self.rng.uniform(0.5, 3.0))
        await victim.restart()

    async def _kill_both(self) -> None:
        for replica in self.replicas:
            replica.kill()
        self.kills.append(time.time())
        await asyncio.sleep(self.rng.uniform(0.5, 3.0))
        for replica in self.replicas:
            await replica.restart()

    async def _pause_broker(self) -> None:
        os.kill(self.broker_pid, signal.SIGSTOP)
        try:
            await asyncio.sleep(self.pause_seconds)
        finally:
            os.kill(self.broker_pid, signal.SIGCONT)

    async def _api_errors(self, setting: str, value: float = 0.3) -> None:
        await self._admin("PUT", "faults", {setting: value})
        await asyncio.sleep(self.rng.uniform(3.0, 6.0))
        await self._admin("PUT", "faults", {setting: 0.0})

    async def _api_500(self) -> None:
        await self._api_errors("error_rate")

    async def _api_429(self) -> None:
        await self._api_errors("throttle_rate")

    async def _api_latency(self) -> None:
        await self._api_errors("latency", LATENCY)

    async def _watch_drop(self) -> None:
        await self._admin("POST", "watches/drop")

    async def _history_410(self) -> None:
        await self._admin("POST", "watches/expire")
        await self._admin("POST", "watches/drop")

    async def _node_loss(self) -> None:
        await self.view.refresh()
        # of the nodes running pods, the one running the fewest: few outcomes to change
        load = Counter(p["spec"].get("nodeName") for p in self.view.pods if pod_phase(p) in LIVE)
        nodes = [n for n in (f"node-{i}" for i in range(1, NODES + 1)) if load[n]]
        node = min(nodes or ["node-1"], key=lambda n: (load[n], self.rng.random()))
        # what ran there just before, and what failed NodeLost (a pod bound meanwhile)
        hit = {p["metadata"]["uid"]: p for p in self._on(node) if pod_phase(p) in LIVE}
        await self._admin("POST", f"nodes/{node}/lose")
        await self.view.refresh()
        hit |= {
            p["metadata"]["uid"]: p
            for p in self._on(node)
            if (p.get("status") or {}).get("reason") == "NodeLost"
        }
        for uid, pod in hit.items():
            if uid not in self._lost:
                self._lost.add(uid)
                self.node_lost.add(job_of(pod))
                self.removed[pod["metadata"]["name"], version_of(pod)] += 1
        await asyncio.sleep(self.rng.uniform(3.0, 6.0))
        await self._admin("POST", f"nodes/{node}/restore")

    async def end_node_loss_victims(self) -> None:
        """Terminate the jobs a node loss hit that have not finished: some never will (a
        gang member failed with NodeLost and no policy acts on it, so the gang waits in
        Pending for ever, as in Volcano); they are compared for nothing but duplicates,
        leftovers and the audit, which termination exercises too."""
        await self.view.refresh()
        for name in sorted(self.node_lost):
            found = self.view.jobs.get(name)
            if found is not None and phase_of(found) not in FINISHED:
                body = command_object(
                    NAMESPACE, name, found["metadata"]["uid"], ACTIONS["terminate"]
                )
                await call(self.kube, "POST", COMMANDS, body=body)
                self.terminated.append(name)

    def _on(self, node: str) -> list[Obj]:
        return [p for p in self.view.pods if p["spec"].get("nodeName") == node]

    async def _evict(self) -> None:
        """Evict up to three running pods of running jobs whose policies ignore evictions."""
        await self.view.refresh()
        candidates = sorted(
            (p for p in self.view.pods if self._evictable(p)), key=lambda p: p["metadata"]["name"]
        )
        for pod in self.rng.sample(candidates, min(3, len(candidates))):
            try:
                await self._admin("POST", f"pods/{NAMESPACE}/{pod['metadata']['name']}/evict")
            except aiohttp.ClientResponseError:
                continue  # gone in the meantime
            self.removed[pod["metadata"]["name"], version_of(pod)] += 1

    def _evictable(self, pod: Obj) -> bool:
        name = job_of(pod)
        found, planned = self.view.jobs.get(name), self.planned.get(name)
        return (
            planned is not None  # no job of the workload has a policy on PodEvicted
            and phase_of(found) == "Running"
            and pod_phase(pod) == "Running"
            and not pod["metadata"].get("deletionTimestamp")
            and version_of(pod) == int(((found or {}).get("status") or {}).get("version", 0))
        )

    async def _poison(self) -> None:
        """Undecodable bytes on the partition of a job of the run, between its facts."""
        target = self.rng.choice(sorted(self.planned))
        junk = self.rng.randbytes(self.rng.randint(1, 64))
        async with create_producer(self.kafka) as producer:
            sent = await producer.send_and_wait(
                topic_name(self.kafka, topics.OBSERVED), junk, key=f"{NAMESPACE}/{target}".encode()
            )
        self.poison.add((sent.partition, sent.offset))
