"""Leader election: one replica watches and publishes; another takes over when it goes."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import msgspec
import pytest
import structlog

from lavalog.controller.kafka import KafkaSettings
from lavalog.controller.kube import MERGE_PATCH, Kube, connect
from lavalog.controller.watchers.core.lease import LeaseTiming, micro_time
from lavalog.controller.watchers.core.objects import Lease
from lavalog.controller.watchers.service.leader import (
    ElectionThread,
    LeaderElection,
    LeaseSettings,
)
from lavalog.events.observations import AnyObservation, JobObserved
from lavalog.simulator import registry
from lavalog.simulator.server import SimulatedCluster
from lavalog.simulator.store import Change
from tests.watchers.conftest import ONE_NODE, ObservedLog, create_job, running, service, until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60), ONE_NODE]

LEASE = "/apis/coordination.k8s.io/v1/namespaces/default/leases/lavalog-watchers"


def about(job: str, seen: list[AnyObservation]) -> list[JobObserved]:
    return [o for o in seen if isinstance(o, JobObserved) and o.key == f"default/{job}"]


async def read_lease(kube: Kube) -> Lease:
    return msgspec.json.decode(await kube.request("GET", LEASE), type=Lease)


def holders(cluster: SimulatedCluster) -> list[str]:
    """The holders the Lease names, in order, as the API server stores its writes ("" for
    released); filled as the writes come."""
    seen: list[str] = []

    def follow(change: Change) -> None:
        if change.resource is registry.LEASE and change.type != "DELETED":
            holder = change.entry.obj["spec"].get("holderIdentity") or ""
            if not seen or seen[-1] != holder:
                seen.append(holder)

    cluster.store.subscribe(follow)
    return seen


async def test_only_the_leader_publishes_and_a_standby_takes_over(
    sim_cluster: SimulatedCluster, kube: Kube, kafka_settings: KafkaSettings, observed: ObservedLog
) -> None:
    lease_holders = holders(sim_cluster)
    leader = service(kube, kafka_settings, "replica-a", lease_duration=2.0)
    standby = service(kube, kafka_settings, "replica-b", lease_duration=2.0)
    async with running(leader) as (leader_task,):
        await until(lambda: leader.is_leader and leader.ready)
        async with running(standby):
            await until(lambda: standby.ready)
            assert not standby.is_leader
            await create_job(kube, "one")
            await observed.wait_for(lambda seen: bool(about("one", seen)))
            seen = await observed.settle()
            assert len(about("one", seen)) == 1  # the standby does not watch

            leader_task.cancel()  # a graceful stop releases the lease: no waiting for expiry
            await until(lambda: standby.is_leader and standby.ready)
            # taken once released (a claim that expired would go from a to b directly)
            assert lease_holders == ["replica-a", "", "replica-b"]
            await create_job(kube, "two")
            seen = await observed.wait_for(lambda seen: bool(about("two", seen)))

    # the new leader listed "one" again: the same fact, under the same id
    assert len({o.id for o in about("one", seen)}) == 1
    lease = await read_lease(kube)
    assert (lease.spec.holder_identity, lease.spec.lease_transitions) == ("", 1)  # released again


async def test_a_leader_that_loses_its_lease_stops_publishing_until_it_wins_it_back(
    kube: Kube, kafka_settings: KafkaSettings, observed: ObservedLog
) -> None:
    watchers = service(kube, kafka_settings, "replica-a", lease_duration=2.0)
    async with running(watchers):
        await until(lambda: watchers.is_leader and watchers.ready)
        assert watchers.counters == {"terms": 1}
        stolen = {
            "holderIdentity": "intruder",
            "renewTime": micro_time(time.time()),
            "leaseDurationSeconds": 2,
            "leaseTransitions": 1,
        }
        # whatever the leader renewed meanwhile: a write naming no resourceVersion
        # overwrites the lease (the leader renews every 2/3 s, a guarded write races it)
        await kube.request("PATCH", LEASE, body={"spec": stolen}, content_type=MERGE_PATCH)
        await until(lambda: not watchers.is_leader, within=2.0)  # at its next renewal

        await create_job(kube, "meanwhile")
        assert not about("meanwhile", await observed.settle(quiet=0.5))  # not watching

        # the intruder never renews: once its claim is 2 s old, the lease is taken back
        await until(lambda: watchers.is_leader and watchers.ready, within=5.0)
        await observed.wait_for(lambda seen: bool(about("meanwhile", seen)))
        lease = await read_lease(kube)
        assert (lease.spec.holder_identity, lease.spec.lease_transitions) == ("replica-a", 2)
        assert watchers.counters == {"terms": 2}  # on /metrics: lavalog_watchers_terms_total


async def released_after_a_write_of(kube: Kube, holder: str) -> LeaderElection:
    """replica-a, leading, releases the Lease after `holder` wrote it (unguarded) since
    replica-a last read or wrote it."""
    settings = LeaseSettings(identity="replica-a", timing=LeaseTiming.scaled(60.0))
    election = LeaderElection(kube, settings)
    await election.acquire()
    claim = {"holderIdentity": holder, "renewTime": micro_time(time.time())}
    await kube.request("PATCH", LEASE, body={"spec": claim}, content_type=MERGE_PATCH)
    await election.release()
    return election


async def test_a_leader_whose_last_renewal_went_unanswered_still_releases_its_lease(
    kube: Kube,
) -> None:
    """A graceful stop cancels the renewal in flight: the API server may have written it
    while its answer never came back, so the leader's copy of the Lease is one version
    behind and its release gets 409. It reads the Lease again, finds its own claim and
    releases it, or a standby would wait for the claim to expire."""
    election = await released_after_a_write_of(kube, "replica-a")

    assert (await read_lease(kube)).spec.holder_identity == ""
    assert not election.is_leader


async def test_a_leader_releases_no_claim_but_its_own(kube: Kube) -> None:
    """A release that finds the Lease taken meanwhile leaves the new holder's claim."""
    await released_after_a_write_of(kube, "intruder")

    assert (await read_lease(kube)).spec.holder_identity == "intruder"


async def hold_lease(kube: Kube, identity: str, duration: float) -> tuple[Lease, float]:
    """A Lease `identity` has just claimed, as a process killed right after renewing
    leaves it (no release); and when (monotonic) it was written."""
    election = LeaderElection(
        kube, LeaseSettings(identity=identity, timing=LeaseTiming.scaled(duration))
    )
    await election.acquire()
    return await read_lease(kube), time.monotonic()


async def test_a_restarted_process_of_the_same_identity_takes_its_lease_back_at_once(
    kube: Kube,
) -> None:
    before, _ = await hold_lease(kube, "replica-a", duration=60.0)

    restarted = LeaderElection(
        kube, LeaseSettings(identity="replica-a", timing=LeaseTiming.scaled(60.0))
    )
    await restarted.acquire()  # one attempt: the claim it finds is its own

    after = await read_lease(kube)
    assert after.spec.holder_identity == "replica-a"
    # taken back while the previous claim (60 s) was still valid, as the same holder:
    # no transition, the same acquireTime, a newer renewTime
    assert after.spec.lease_transitions == before.spec.lease_transitions
    assert after.spec.acquire_time == before.spec.acquire_time
    assert (after.spec.renew_time or "") > (before.spec.renew_time or "")


async def test_a_new_identity_waits_for_the_previous_claim_to_expire(kube: Kube) -> None:
    before, written = await hold_lease(kube, "replica-a", duration=2.0)

    newcomer = LeaderElection(
        kube, LeaseSettings(identity="replica-b", timing=LeaseTiming.scaled(2.0))
    )
    await newcomer.acquire()
    became_leader = time.monotonic()

    after = await read_lease(kube)
    assert after.spec.holder_identity == "replica-b"
    assert after.spec.lease_transitions == before.spec.lease_transitions + 1
    # not before the previous holder's claim had gone unrenewed for its whole duration
    assert became_leader - written >= 2.0


async def test_a_release_without_an_answer_is_given_up_at_the_renew_deadline(
    sim_cluster: SimulatedCluster, kube: Kube
) -> None:
    """As client-go's release: a stopping leader does not wait out the request's own
    timeout (30 s) for an API server that does not answer; its claim expires."""
    timing = LeaseTiming.scaled(2.0)
    election = LeaderElection(kube, LeaseSettings(identity="replica-a", timing=timing))
    await election.acquire()
    sim_cluster.faults.hold("/leases/")
    try:
        started = time.monotonic()
        with structlog.testing.capture_logs() as logs:
            await election.release()
        waited = time.monotonic() - started
    finally:
        sim_cluster.faults.release("/leases/")

    assert timing.renew_deadline <= waited < 15.0
    assert [(e["event"], e["error"]) for e in logs] == [
        ("cannot release the lease", "TimeoutError")
    ]
    assert not election.is_leader


class StoppedAsAnswered(Kube):
    """Cancels `holding` the moment the API server answers a renewal (a PATCH): the stop
    and the answer reach the renewal loop in the same turn of the event loop."""

    holding: asyncio.Task[None] | None = None

    async def request(self, method: str, path: str, **options: Any) -> bytes:
        data = await super().request(method, path, **options)
        if method == "PATCH" and self.holding is not None:
            self.holding.cancel()
        return data


async def test_a_leader_stopped_as_its_renewal_is_answered_stops_renewing(kube: Kube) -> None:
    """A renewal bounded by Python 3.11's `asyncio.wait_for` returned its answer to a
    leader cancelled in the turn the answer came in: the stop was lost, the renewals went
    on after the service had stopped (its release waiting for them for ever) and met the
    client closed under them ("Session is closed")."""
    stopping = StoppedAsAnswered(kube.api)
    election = LeaderElection(
        stopping, LeaseSettings(identity="replica-a", timing=LeaseTiming.scaled(2.0))
    )
    await election.acquire()  # creates the Lease: no PATCH
    holding = asyncio.create_task(election.hold())
    stopping.holding = holding

    async with asyncio.timeout(10):  # a renewal every 2/3 s, each cancelled as answered
        await asyncio.gather(holding, return_exceptions=True)

    assert holding.cancelled()


@pytest.fixture
def cluster_apart() -> Iterator[SimulatedCluster]:
    """A simulated cluster served from a thread and loop of its own: it answers while the
    test's loop (the controller's) is held."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="simulated cluster")
    thread.start()

    async def start() -> SimulatedCluster:
        cluster = SimulatedCluster(nodes=1, time_scale=50, bookmark_interval=0.2)
        await cluster.start()
        return cluster

    try:
        cluster = asyncio.run_coroutine_threadsafe(start(), loop).result()
        try:
            yield cluster
        finally:
            asyncio.run_coroutine_threadsafe(cluster.stop(), loop).result()
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join()
        loop.close()


def claims(cluster: SimulatedCluster) -> list[tuple[str, str]]:
    """Every write of the Lease, as (holder, renewTime), as the API server stores them."""
    seen: list[tuple[str, str]] = []

    def follow(change: Change) -> None:
        if change.resource is registry.LEASE and change.type != "DELETED":
            spec = change.entry.obj["spec"]
            seen.append((spec.get("holderIdentity") or "", spec.get("renewTime") or ""))

    cluster.store.subscribe(follow)
    return seen


def sleep(seconds: float) -> None:
    time.sleep(seconds)


def spin(seconds: float) -> None:
    """Pure Python for `seconds`: it lets other threads have the interpreter only every
    switch interval (5 ms), as a long fold does."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


@pytest.mark.parametrize("hold", [sleep, spin], ids=["blocking call", "CPU burst"])
async def test_a_leader_whose_loop_is_held_past_its_renew_deadline_keeps_its_lease(
    cluster_apart: SimulatedCluster, kafka_settings: KafkaSettings, hold: Callable[[float], None]
) -> None:
    """The Lease is renewed from a thread of its own: a loop held for longer than the
    Lease lasts (a long fold, a burst of work) costs the leader neither the Lease nor its
    watchers' term, and the loop's lag is on /metrics."""
    written = claims(cluster_apart)
    async with connect(str(cluster_apart.kubeconfig_path)) as kube:
        watchers = service(kube, kafka_settings, "replica-a", lease_duration=2.0)
        async with running(watchers):
            await until(lambda: watchers.is_leader and watchers.ready)
            held_from, started = micro_time(time.time()), time.monotonic()
            hold(3.0)  # none of the loop's tasks runs meanwhile (renew deadline 1.33 s)
            held_until = micro_time(time.time())
            # renewed since the loop was let go (a leader that stepped down claims anew)
            await until(lambda: any(t > held_until for _, t in written))

            assert [t for _, t in written if held_from < t < held_until]  # renewed meanwhile
            assert {holder for holder, _ in written} == {"replica-a"}  # never released
            assert watchers.is_leader
            assert watchers.counters == {"terms": 1}  # the watchers never stopped
            gauges = watchers.gauges()
            # the hold, less up to a probe's interval (0.5 s), less the probe's own delay
            since = time.monotonic() - started
            assert 2.0 < gauges["event_loop_lag_seconds"] <= since + 0.5
            assert 0.0 < gauges["lease_renewal_seconds"] < 1.33


async def test_an_election_left_while_leading_releases_its_lease_before_its_thread_ends(
    kube: Kube,
) -> None:
    """Leaving `running()` without `release` (a stop that cancels a candidate just as it
    wins) still gives the Lease up, and the thread is gone once it returns."""
    settings = LeaseSettings(identity="replica-a", timing=LeaseTiming.scaled(60.0))
    election = ElectionThread(kube, settings)
    async with election.running():
        await election.acquire()
        assert election.is_leader
        assert (await read_lease(kube)).spec.holder_identity == "replica-a"

    assert (await read_lease(kube)).spec.holder_identity == ""
    assert not election.is_leader
    assert "lease lavalog-watchers" not in {t.name for t in threading.enumerate()}


async def test_an_election_cancelled_again_while_it_releases_still_releases_and_ends_its_thread(
    sim_cluster: SimulatedCluster, kube: Kube
) -> None:
    """A stop that comes twice (the second while the Lease is being released, its answer
    slow) returns at once; the thread still gives the Lease up, then ends and closes its
    event loop without anyone waiting for it."""
    settings = LeaseSettings(identity="replica-a", timing=LeaseTiming.scaled(60.0))
    election = ElectionThread(kube, settings)
    won = asyncio.Event()

    async def lead() -> None:
        async with election.running():
            await election.acquire()
            won.set()
            await asyncio.Event().wait()

    leading = asyncio.create_task(lead())
    await asyncio.wait_for(won.wait(), 10)
    loop = election._loop
    assert loop is not None
    sim_cluster.faults.hold("/leases/")
    try:
        leading.cancel()  # leaves `running()`: the release waits for the API server
        await asyncio.sleep(0.2)
        assert not leading.done()
        leading.cancel()  # stopped again meanwhile
        await asyncio.gather(leading, return_exceptions=True)
        assert leading.cancelled()
    finally:
        sim_cluster.faults.release("/leases/")

    await until(lambda: "lease lavalog-watchers" not in {t.name for t in threading.enumerate()})
    assert loop.is_closed()
    assert (await read_lease(kube)).spec.holder_identity == ""
