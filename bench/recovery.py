"""Recovery: from SIGKILL of `lavalog run` to the first decision carried out after its restart.

    python bench/recovery.py [--kills 20] [--partitions 12]

`lavalog run` runs in a child process against the development broker and a simulated
cluster in this process. `--kills` times it is SIGKILLed (no LeaveGroup, no Lease
release) once it is ready, and started again at once, as a container restarted in its
pod is: with the same identity (the pod name), then, as the baseline, with a new one
each time (what the old default identity, host-pid, gave every restart). Right after
each kill a new Job is submitted; the clock stops when the restarted controller has
carried out its first decision, the Job's PodGroup (read from the store's listener),
and also notes when the Lease names the restarted process. Group timeouts are the
test ones (2 s session): on tansu a group forms in half the session timeout
(docs/kafka.md). The Lease lasts `lavalog run`'s default 15 s.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.harness import LavalogRun, kafka_settings, say, table
from bench.reaction import JOBS_PATH, job, percentile
from lavalog.controller.broker import DevelopmentBroker
from lavalog.controller.kafka import ensure_topics
from lavalog.controller.kube import Kube, connect
from lavalog.simulator import registry
from lavalog.simulator.server import SimulatedCluster
from lavalog.simulator.store import Change


@dataclass
class Recovery:
    """One kill: when it happened, and when the restarted process was seen to act."""

    job: str
    identity: str
    killed: float
    lease: float | None = None
    carried_out: asyncio.Future[float] = field(default_factory=asyncio.Future)


class Milestones:
    """The store listener: the Lease naming the restarted process, the Job's PodGroup."""

    def __init__(self) -> None:
        self.current: Recovery | None = None

    def __call__(self, change: Change) -> None:
        recovery = self.current
        if recovery is None:
            return
        obj = change.entry.obj
        if change.resource is registry.LEASE:
            holder = obj.get("spec", {}).get("holderIdentity")
            if holder == recovery.identity and recovery.lease is None:
                recovery.lease = time.time()
        elif change.resource is registry.PODGROUP and change.type == "ADDED":
            owners = obj["metadata"].get("ownerReferences") or ()
            owned = any(o.get("name") == recovery.job for o in owners)
            if owned and not recovery.carried_out.done():
                recovery.carried_out.set_result(time.time())


async def kills(
    controller: LavalogRun,
    kube: Kube,
    milestones: Milestones,
    count: int,
    name: str,
    identity_after: Callable[[int], str],
) -> list[Recovery]:
    """Start the controller, then `count` times: kill it once ready, start it again under
    `identity_after(n)`, submit a Job, wait for its first decision to be carried out."""
    recoveries = []
    controller.identity = identity_after(0)
    await controller.start()
    try:
        for number in range(1, count + 1):
            await controller.ready(within=120)
            await asyncio.sleep(0.5)  # a heartbeat or two, a Lease renewal: steady state
            manifest = job(number, 1)
            manifest["metadata"]["name"] = f"{name}-{number}"
            identity = identity_after(number)
            killed = time.time()  # wall clock, as the store listener's times
            controller.kill()
            recovery = milestones.current = Recovery(manifest["metadata"]["name"], identity, killed)
            controller.identity = identity
            await controller.restart()  # waits for the killed process, starts it again
            await kube.request("POST", JOBS_PATH, body=manifest)
            await asyncio.wait_for(recovery.carried_out, timeout=120)
            recoveries.append(recovery)
            seconds = recovery.carried_out.result() - killed
            say(f"  {name} {number:>3}: first decision carried out {seconds:.2f} s after SIGKILL")
    finally:
        milestones.current = None
        await controller.stop()
    return recoveries


def summary(label: str, recoveries: list[Recovery]) -> list[list[str]]:
    carried = [r.carried_out.result() - r.killed for r in recoveries]
    leases = [r.lease - r.killed for r in recoveries if r.lease is not None]
    return [
        [
            f"{label}: first decision carried out",
            f"{statistics.median(carried):.2f}",
            f"{percentile(carried, 0.99):.2f}",
            f"{min(carried):.2f}",
            f"{max(carried):.2f}",
        ],
        [
            f"{label}: Lease held again",
            f"{statistics.median(leases):.2f}",
            f"{percentile(leases, 0.99):.2f}",
            f"{min(leases):.2f}",
            f"{max(leases):.2f}",
        ],
    ]


async def main(args: argparse.Namespace) -> None:
    milestones = Milestones()
    async with (
        DevelopmentBroker() as broker,
        SimulatedCluster(nodes=2, time_scale=50) as cluster,
        connect(str(cluster.kubeconfig_path)) as kube,
    ):
        cluster.objects.store.subscribe(milestones)
        settings = kafka_settings(broker.bootstrap_servers, args.partitions)
        await ensure_topics(settings)
        with tempfile.TemporaryDirectory(prefix="lavalog-recovery-") as tmp:
            controller = LavalogRun(settings, cluster.kubeconfig_path, Path(tmp) / "run.log", "")
            say(f"{args.kills} kills with the same identity (the pod name)")
            same = await kills(
                controller, kube, milestones, args.kills, "same", lambda _: "recovery-pod"
            )
            say(f"{args.kills} kills with a new identity each time (baseline: the old default)")
            pid = os.getpid()
            new = await kills(
                controller, kube, milestones, args.kills, "new", lambda n: f"host-{pid}-{n}"
            )
    table(
        ["SIGKILL -> (s)", "p50", "p99", "min", "max"],
        summary("same identity", same) + summary("new identity", new),
    )
    say(
        f"\n{args.kills} kills each; target (issue 10): the same identity resumes within 3 s. "
        f"Session timeout {settings.session_timeout_ms} ms, Lease 15 s."
    )


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=20, help="kills per identity mode")
    parser.add_argument("--partitions", type=int, default=12)
    return parser.parse_args()


if __name__ == "__main__":
    asyncio.run(main(parse()))
