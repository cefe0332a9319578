"""SIGKILL `lavalog run` and start it again under the same identity (a container restarted
in its pod): it takes its Lease back and carries out the next decision while its
predecessor's Lease would still be valid and before its predecessor's group members'
sessions would have run out, i.e. without waiting for either.

The kill lands right after a Lease renewal (from the store's synchronous listener), so
the old claim has its whole duration left; the group timeouts are long enough that a
member evicted by its successor is told from one that timed out.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from bench.harness import LavalogRun
from lavalog.controller.kafka import ensure_topics
from lavalog.simulator import registry
from lavalog.simulator.store import Change
from tests.e2e.conftest import make_kafka, running_system
from tests.e2e.jobs import job, task
from tests.e2e.test_crash import IDENTITY

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

#: tansu lets a group form after half the session timeout (docs/kafka.md)
SESSION_MS, HEARTBEAT_MS = 14_000, 500


def epoch(micro_time: str) -> float:
    return datetime.strptime(micro_time, "%Y-%m-%dT%H:%M:%S.%f%z").timestamp()


@dataclasses.dataclass
class Timeline:
    """What the API server stored around the kill, as it happened."""

    killed: float | None = None
    #: the Lease as the killed process last wrote it
    old_lease: dict[str, Any] | None = None
    #: the first Lease write after the kill
    new_lease: dict[str, Any] | None = None
    #: when the job's PodGroup (its first decision) was created
    carried_out: float | None = None


def is_podgroup_of(change: Change, job_name: str) -> bool:
    """Whether `change` creates the PodGroup of `job_name`: its first decision carried out."""
    if change.resource is not registry.PODGROUP or change.type != "ADDED":
        return False
    owners = change.entry.obj["metadata"].get("ownerReferences") or ()
    return any(owner["name"] == job_name for owner in owners)


async def kill_after_a_renewal(
    controller: LavalogRun, armed: asyncio.Event, killed: asyncio.Event
) -> None:
    """Start `controller` and, once it is ready, arm the store listener that kills it right
    after its next Lease renewal (the claim then has its whole duration left)."""
    await controller.start()
    await controller.ready()
    armed.set()
    async with asyncio.timeout(30):
        await killed.wait()


async def test_a_restarted_controller_takes_its_lease_and_groups_back_without_waiting(
    kafka_broker: str, tmp_path: Path
) -> None:
    kafka = dataclasses.replace(
        make_kafka(kafka_broker), session_timeout_ms=SESSION_MS, heartbeat_interval_ms=HEARTBEAT_MS
    )
    await ensure_topics(kafka)
    manifest = job("after-restart", task("worker", 1, "sleep 5"))
    async with running_system(kafka, replicas=()) as system:
        controller = LavalogRun(
            kafka, system.cluster.kubeconfig_path, tmp_path / "controller.log", IDENTITY
        )
        timeline = Timeline()
        armed, killed, carried_out = asyncio.Event(), asyncio.Event(), asyncio.Event()

        def watch(change: Change) -> None:
            obj = change.entry.obj
            if change.resource is registry.LEASE and change.type == "MODIFIED":
                if timeline.killed is None and armed.is_set():
                    controller.kill()  # right after it renewed: the claim has all its time left
                    timeline.killed, timeline.old_lease = time.time(), obj
                    killed.set()
                elif timeline.killed is not None and timeline.new_lease is None:
                    timeline.new_lease = obj
            elif is_podgroup_of(change, "after-restart"):
                timeline.carried_out = time.time()
                carried_out.set()

        system.cluster.store.subscribe(watch)
        try:
            await kill_after_a_renewal(controller, armed, killed)
            await controller.restart()
            await system.submit(manifest)
            async with asyncio.timeout(60):
                await carried_out.wait()
        finally:
            await controller.stop()

    assert timeline.killed is not None and timeline.carried_out is not None
    old, new = timeline.old_lease, timeline.new_lease
    assert old is not None and new is not None, controller.tail()
    # the Lease: taken back by the same holder while its old claim was valid
    assert old["spec"]["holderIdentity"] == new["spec"]["holderIdentity"] == IDENTITY
    assert new["spec"]["leaseTransitions"] == old["spec"]["leaseTransitions"]
    old_expiry = epoch(old["spec"]["renewTime"]) + old["spec"]["leaseDurationSeconds"]
    assert epoch(new["spec"]["renewTime"]) < old_expiry
    # the next decision: carried out before the old Lease would have expired, and before
    # the old group members' sessions (from their last heartbeat) would have run out
    # (all times are this machine's wall clock, as the Lease's are)
    assert timeline.carried_out < old_expiry, controller.tail()
    assert timeline.carried_out < timeline.killed + (SESSION_MS - HEARTBEAT_MS) / 1000


async def test_a_replacement_under_a_new_identity_takes_over_after_a_short_lease(
    kafka_broker: str, tmp_path: Path
) -> None:
    """A controller pod replaced by a new one (a new pod name) with `--lease-duration 2`:
    the replacement takes the Lease the killed one left, once that claim has run out, and
    carries out the next decision. (How long that takes is `bench/recovery.py`'s.)"""
    kafka = make_kafka(kafka_broker)
    await ensure_topics(kafka)
    manifest = job("after-replacement", task("worker", 1, "sleep 5"))
    lease = ("--lease-duration", "2")
    async with running_system(kafka, replicas=()) as system:
        old = LavalogRun(kafka, system.cluster.kubeconfig_path, tmp_path / "old.log", "old", lease)
        new = LavalogRun(kafka, system.cluster.kubeconfig_path, tmp_path / "new.log", "new", lease)
        leases: list[dict[str, Any]] = []
        armed, killed, taken_over, carried_out = (asyncio.Event() for _ in range(4))

        def watch(change: Change) -> None:
            obj = change.entry.obj
            if change.resource is registry.LEASE:
                leases.append(obj)
                if armed.is_set() and not killed.is_set():
                    old.kill()  # right after it renewed: the claim has all its time left
                    killed.set()
                elif obj["spec"]["holderIdentity"] == "new":
                    taken_over.set()
            elif is_podgroup_of(change, "after-replacement"):
                carried_out.set()

        system.cluster.store.subscribe(watch)
        try:
            await kill_after_a_renewal(old, armed, killed)
            last_claim = leases[-1]
            await new.start()
            await system.submit(manifest)
            async with asyncio.timeout(60):
                await taken_over.wait()
                await carried_out.wait()
        finally:
            await asyncio.gather(old.stop(), new.stop())

    # the killed controller's last claim lasted the configured 2 s, and the replacement
    # took it over as a new holder (a transition), with the same short lease
    assert last_claim["spec"]["holderIdentity"] == "old"
    assert last_claim["spec"]["leaseDurationSeconds"] == 2
    (first_new,) = [obj for obj in leases if obj["spec"]["holderIdentity"] == "new"][:1]
    assert first_new["spec"]["leaseTransitions"] == last_claim["spec"]["leaseTransitions"] + 1
    assert first_new["spec"]["leaseDurationSeconds"] == 2, new.tail()
