"""Recovery: from SIGKILL of `lavalog run` to the first decision carried out after it, and
what the failover settings cost in API calls and under load.

    python bench/recovery.py [--kills 5] [--leases 15,10,5] [--sessions 10000/3000,6000/2000]
                             [--load-jobs 2000] [--partitions 12]

`lavalog run` runs in a child process against the development broker and a simulated
cluster in this process. For each group session timeout / heartbeat interval (ms), it
is SIGKILLed (no LeaveGroup, no Lease release) `--kills` times once it is ready, and
started again at once: with the same identity (a container restarted in its pod, which
takes its Lease and group members back at once: the baseline), then, for each Lease
duration (`--lease-duration`; deadline and retry period in proportion), with a new
identity each time (a replaced pod, which waits for the old claim and the old members'
sessions to run out). Right after each kill a new Job is submitted; the clock stops when
the restarted controller has carried out its first decision, the Job's PodGroup (read
from the store's listener); it also notes when the Lease names the restarted process.
Each setting gets a fresh simulated cluster and fresh topics and groups (tansu keeps a
group's first session timeout).

Lease calls/s, as the API server counted them: the leader's, over three retry periods
of steady state; a replacement's tries while it waits for the old claim. Under load:
with the shortest Lease and session, `--load-jobs` one-pod Jobs submitted at once, and
whether the leader stepped down (a Lease transition) or a group member was evicted (a
member id that changed) before they all had their PodGroup and one session more passed.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import itertools
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import msgspec
from aiokafka.client import CoordinationType

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.harness import LavalogRun, bounded, kafka_settings, run_benchmark, say, table
from bench.reaction import JOBS_PATH, percentile, reaction_job
from lavalog.controller.broker import DevelopmentBroker
from lavalog.controller.collector import collect_rarely
from lavalog.controller.decider.service.runner import GROUP_ID as DECIDER_GROUP
from lavalog.controller.kafka import KafkaSettings, ensure_topics
from lavalog.controller.kafka.groups import describe_group, group_client
from lavalog.controller.kafka.topics import group_name
from lavalog.controller.kube import Kube, connect
from lavalog.controller.watchers.core.lease import LeaseTiming
from lavalog.simulator import registry
from lavalog.simulator.access import Access
from lavalog.simulator.server import SimulatedCluster
from lavalog.simulator.store import Change

GROUPS = (DECIDER_GROUP, "lavalog-actuator")
LEASE_PATH = "/apis/coordination.k8s.io/v1/namespaces/default/leases/lavalog-watchers"


@dataclass(frozen=True)
class Setting:
    """One failover setting: `--lease-duration` and the groups' session and heartbeat."""

    lease: float
    session_ms: int
    heartbeat_ms: int

    @property
    def timing(self) -> LeaseTiming:
        return LeaseTiming.scaled(self.lease)

    def __str__(self) -> str:
        return f"lease {self.lease:g} s, session {self.session_ms / 1000:g} s"

    def kafka(self, bootstrap: str, partitions: int) -> KafkaSettings:
        """Fresh topics and groups for this setting."""
        settings = kafka_settings(bootstrap, partitions, f"bench.recovery.{uuid.uuid4().hex[:8]}.")
        return dataclasses.replace(
            settings, session_timeout_ms=self.session_ms, heartbeat_interval_ms=self.heartbeat_ms
        )


@dataclass
class Recovery:
    """One kill: when it happened, and when the restarted process was seen to act."""

    job: str
    identity: str
    killed: float
    lease: float | None = None
    carried_out: asyncio.Future[float] = field(default_factory=asyncio.Future)


class Milestones:
    """The store listener: the Lease naming the restarted process, the Job's PodGroup, and
    how many PodGroups of the load exist."""

    def __init__(self) -> None:
        self.current: Recovery | None = None
        self.load_podgroups = 0

    def __call__(self, change: Change) -> None:
        obj, recovery = change.entry.obj, self.current
        if change.resource is registry.LEASE:
            holder = obj.get("spec", {}).get("holderIdentity")
            if recovery and holder == recovery.identity and recovery.lease is None:
                recovery.lease = time.time()
        elif change.resource is registry.PODGROUP and change.type == "ADDED":
            owners = [o.get("name", "") for o in obj["metadata"].get("ownerReferences") or ()]
            self.load_podgroups += any(name.startswith("load-") for name in owners)
            if recovery and recovery.job in owners and not recovery.carried_out.done():
                recovery.carried_out.set_result(time.time())


class LeaseCalls:
    """The request listener: when each call to a Lease was served, and its verb."""

    def __init__(self) -> None:
        self.calls: list[tuple[float, str]] = []

    def __call__(self, access: Access) -> None:
        if access.resource == "leases":
            self.calls.append((time.time(), access.verb))

    async def rate_over(self, seconds: float) -> float:
        """Lease calls per second over the next `seconds`."""
        before, started = len(self.calls), time.time()
        await asyncio.sleep(seconds)
        return (len(self.calls) - before) / (time.time() - started)

    def gaps_between_tries(self, start: float, end: float) -> list[float]:
        """Seconds between one waiting candidate's successive reads of the Lease."""
        reads = [at for at, verb in self.calls if verb == "get" and start <= at < end]
        return [later - earlier for earlier, later in itertools.pairwise(reads)]


@dataclass
class Measured:
    setting: Setting
    #: "same" or "new"
    identity: str
    recoveries: list[Recovery]
    leader_calls_per_s: float
    waiting_calls_per_s: float | None


async def one_kill(
    controller: LavalogRun, kube: Kube, milestones: Milestones, name: str, identity: str
) -> Recovery:
    """Kill the ready controller, start it again under `identity`, submit a Job, wait for
    its first decision to be carried out."""
    await controller.ready(within=120)
    await asyncio.sleep(0.5)  # a heartbeat or two, a Lease renewal: steady state
    manifest = reaction_job(0, 1)
    manifest["metadata"]["name"] = name
    killed = time.time()  # wall clock, as the store listener's times
    controller.kill()
    recovery = milestones.current = Recovery(name, identity, killed)
    controller.identity = identity
    await controller.restart()  # waits for the killed process, starts it again
    await kube.request("POST", JOBS_PATH, body=manifest)
    await asyncio.wait_for(recovery.carried_out, timeout=120)
    milestones.current = None
    say(f"  {name}: first decision carried out {recovery.carried_out.result() - killed:.2f} s")
    return recovery


async def measure(
    bootstrap: str,
    args: argparse.Namespace,
    setting: Setting,
    identity_after: Callable[[int], str],
    label: str,
) -> Measured:
    """Run the controller under `setting` on a fresh cluster: its steady Lease calls, then
    `args.kills` kills, each restarted under `identity_after(n)`."""
    milestones, lease_calls = Milestones(), LeaseCalls()
    async with (
        SimulatedCluster(nodes=2, time_scale=50) as cluster,
        connect(str(cluster.kubeconfig_path)) as kube,
    ):
        cluster.objects.store.subscribe(milestones)
        cluster.on_request(lease_calls)
        settings = setting.kafka(bootstrap, args.partitions)
        await ensure_topics(settings)
        with tempfile.TemporaryDirectory(prefix="lavalog-recovery-") as tmp:
            options = ("--lease-duration", f"{setting.lease:g}")
            log = Path(tmp) / "run.log"
            controller = LavalogRun(
                settings, cluster.kubeconfig_path, log, identity_after(0), options
            )
            await controller.start()
            try:
                await controller.ready(within=120)
                leader_rate = await lease_calls.rate_over(3 * setting.timing.retry_period)
                recoveries = [
                    await one_kill(controller, kube, milestones, f"{label}-{n}", identity_after(n))
                    for n in range(1, args.kills + 1)
                ]
            finally:
                await controller.stop()
    gaps = [
        gap
        for r in recoveries
        for gap in lease_calls.gaps_between_tries(r.killed, r.lease or r.killed)
    ]
    waiting = 1 / statistics.median(gaps) if gaps else None
    return Measured(setting, label.split("-")[0], recoveries, leader_rate, waiting)


async def under_load(bootstrap: str, args: argparse.Namespace, setting: Setting) -> list[str]:
    """`args.load_jobs` one-pod Jobs at once: did the leader step down, was a member evicted?"""
    milestones = Milestones()
    async with (
        SimulatedCluster(nodes=2, time_scale=50) as cluster,
        connect(str(cluster.kubeconfig_path)) as kube,
    ):
        cluster.objects.store.subscribe(milestones)
        settings = setting.kafka(bootstrap, args.partitions)
        await ensure_topics(settings)
        with tempfile.TemporaryDirectory(prefix="lavalog-recovery-") as tmp:
            options = ("--lease-duration", f"{setting.lease:g}")
            controller = LavalogRun(
                settings, cluster.kubeconfig_path, Path(tmp) / "run.log", "load-pod", options
            )
            await controller.start()
            try:
                await controller.ready(within=120)
                lease_before = await transitions(kube)
                members_before = await members(settings)
                started = time.perf_counter()

                async def submit(index: int) -> None:
                    manifest = reaction_job(index, 1)
                    manifest["metadata"]["name"] = f"load-{index}"
                    await kube.request("POST", JOBS_PATH, body=manifest)

                await bounded(args.load_jobs, 32, submit)
                while milestones.load_podgroups < args.load_jobs:
                    assert controller.running, controller.tail()
                    await asyncio.sleep(0.1)
                took = time.perf_counter() - started
                await asyncio.sleep(setting.session_ms / 1000)  # an eviction would show by now
                step_downs = await transitions(kube) - lease_before
                evicted = members_before - await members(settings)
            finally:
                await controller.stop()
    return [
        f"under load ({setting}): {args.load_jobs:,} one-pod Jobs submitted at once, every "
        f"PodGroup after {took:.1f} s; leader step-downs {step_downs}, group members "
        f"evicted {len(evicted)}"
    ]


async def transitions(kube: Kube) -> int:
    lease = msgspec.json.decode(await kube.request("GET", LEASE_PATH))
    return int(lease["spec"].get("leaseTransitions", 0))


async def members(settings: KafkaSettings) -> set[str]:
    """The member ids of the controller's consumer groups."""
    client = group_client(settings)
    await client.bootstrap()
    try:
        found: set[str] = set()
        for base in GROUPS:
            group = group_name(settings, base)
            coordinator = await client.coordinator_lookup(CoordinationType.GROUP, group)
            found |= (await describe_group(client, coordinator, group))[1]
        return found
    finally:
        await client.close()


def rows(measured: Measured) -> list[str]:
    carried = [r.carried_out.result() - r.killed for r in measured.recoveries]
    leases = [r.lease - r.killed for r in measured.recoveries if r.lease is not None]
    waiting = measured.waiting_calls_per_s
    return [
        str(measured.setting),
        measured.identity,
        f"{statistics.median(carried):.2f}",
        f"{percentile(carried, 0.99):.2f}",
        f"{statistics.median(leases):.2f}",
        f"{measured.leader_calls_per_s:.2f}",
        "-" if waiting is None else f"{waiting:.2f}",
    ]


async def main(args: argparse.Namespace) -> None:
    collect_rarely()  # this process hosts the simulated cluster: as `lavalog sim` does
    sessions = [[int(ms) for ms in pair.split("/")] for pair in args.sessions.split(",")]
    leases = [float(text) for text in args.leases.split(",")]
    results: list[Measured] = []
    async with DevelopmentBroker() as broker:
        bootstrap = broker.bootstrap_servers
        for session_ms, heartbeat_ms in sessions:
            same = Setting(LeaseTiming().duration, session_ms, heartbeat_ms)
            say(f"{same}: {args.kills} kills, restarted with the same identity")
            results.append(await measure(bootstrap, args, same, lambda _: "recovery-pod", "same"))
            for lease in leases:
                setting = Setting(lease, session_ms, heartbeat_ms)
                say(f"{setting}: {args.kills} kills, replaced under a new identity each time")
                name = f"new-{lease:g}-{session_ms}"
                results.append(await measure(bootstrap, args, setting, lambda n: f"pod-{n}", name))
        riskiest = Setting(min(leases), *min(sessions))
        loaded = await under_load(bootstrap, args, riskiest) if args.load_jobs else []
    table(
        [
            "setting",
            "restarted as",
            "SIGKILL -> decision p50 (s)",
            "p99",
            "Lease held p50",
            "leader Lease calls/s",
            "waiting tries/s",
        ],
        [rows(m) for m in results],
    )
    for line in loaded:
        say("\n" + line)
    say(
        f"\n{args.kills} kills each; the same identity is the baseline (target: < 3 s). "
        "Deadline and retry period are 2/3 and 1/3 of the Lease duration."
    )


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=5, help="kills per setting")
    parser.add_argument(
        "--leases", default="15,10,5", help="Lease durations (s) a new identity is measured with"
    )
    parser.add_argument(
        "--sessions",
        default="10000/3000,6000/2000",
        help="group session timeouts / heartbeat intervals (ms)",
    )
    parser.add_argument(
        "--load-jobs",
        type=int,
        default=2000,
        help="Jobs submitted at once under the shortest setting (0: skip)",
    )
    parser.add_argument("--partitions", type=int, default=12)
    return parser.parse_args()


if __name__ == "__main__":
    run_benchmark(main(parse()))
