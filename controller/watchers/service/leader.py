"""Leader election over a `coordination.k8s.io/v1` Lease, as client-go's leaderelection.

Only the leader runs the watchers, so that several replicas can run while one publishes.

* A candidate takes the Lease when nobody holds it, or when its holder has not renewed
  it for the holder's `leaseDurationSeconds`, measured on the candidate's own clock
  from when it first saw that `renewTime` (clocks of two machines are never compared).
  Taking it over sets `acquireTime` and counts one more `leaseTransitions`.
* A candidate that finds the Lease held under its own identity takes it back at once:
  it is a restarted process of the same holder (a container restarted in its pod, whose
  predecessor is gone), and the claim was its own. Identities must therefore be unique
  per live process: the pod name in a Deployment.
* Every write names the resourceVersion it replaces: of two candidates racing for the
  same Lease, one gets 409 Conflict and stays a candidate.
* The leader renews every retry period (`LeaseTiming`). A failed renewal is retried
  until the renew deadline after the last success; then (or at once, when the Lease
  names another holder) it steps down, before any candidate may consider the Lease
  expired. A candidate tries every retry period.
* A leader that stops gracefully releases the Lease (no holder), so that a standby takes
  over without waiting for it to expire; also when its last renewal was cancelled in
  flight after the API server had written it (a 409: read again, still ours, released).
  A release that gets no answer within the renew deadline is given up (the claim expires).
* The election runs on a thread of its own, with its own event loop and API client
  (`ElectionThread`), as client-go's renew loop runs on a goroutine of its own: a
  controller whose loop is held (a long fold, a burst of work) still renews in time and
  keeps the Lease while the process lives. Only "leading" and "lost" reach the loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import AsyncIterator, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, TypeVar

import aiohttp
import msgspec
import structlog

from lavalog.controller.kube import MERGE_PATCH, Kube, KubeError, connected_like
from lavalog.controller.loop_lag import LoopLag
from lavalog.controller.watchers.core.lease import LeaseTiming, Sighting, micro_time
from lavalog.controller.watchers.core.objects import Lease

log = structlog.get_logger("lavalog.watchers")

API_VERSION = "coordination.k8s.io/v1"
#: what a call to the API may fail with and still be worth trying again
RETRYABLE = (KubeError, aiohttp.ClientError, OSError, TimeoutError, msgspec.DecodeError)
_decode = msgspec.json.Decoder(Lease).decode
T = TypeVar("T")


@dataclass(frozen=True, kw_only=True)
class LeaseSettings:
    identity: str
    namespace: str = "default"
    name: str = "lavalog-watchers"
    timing: LeaseTiming = field(default_factory=LeaseTiming)


class LeaderElection:
    """One candidate for one Lease: `acquire`, then `hold` until lost, then `release`."""

    def __init__(
        self,
        kube: Kube,
        settings: LeaseSettings,
        *,
        monotonic: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self.kube = kube
        self.settings = settings
        self._monotonic = monotonic
        self._wall = wall
        self._lease: Lease | None = None
        self._sighting: Sighting | None = None
        self.is_leader = False
        #: how long the last renewal took, from its request to its answer, in seconds
        self.renewal_seconds = 0.0
        self._log = log.bind(lease=f"{settings.namespace}/{settings.name}", me=settings.identity)

    async def acquire(self) -> None:
        """Return once this candidate holds the Lease."""
        while True:
            try:
                if await self._try_acquire():
                    self.is_leader = True
                    self._log.info("became the leader")
                    return
            except RETRYABLE as exc:
                self._log.warning("cannot read or claim the lease", error=_reason(exc))
            await asyncio.sleep(self.settings.timing.retry_period)

    async def hold(self) -> None:
        """Renew the Lease; return (no longer the leader) when it is lost or goes stale."""
        interval, deadline = self.settings.timing.retry_period, self.settings.timing.renew_deadline
        renewed = self._monotonic()
        attempt = renewed + interval
        while True:
            await asyncio.sleep(max(0.0, attempt - self._monotonic()))
            try:
                sent = self._monotonic()
                left = renewed + deadline - sent
                # not `wait_for`: on Python 3.11 it returns the answer of a renewal that
                # completes in the loop iteration this task is cancelled in, and the stop
                # is lost (the renewals outlive the service and the client they use)
                async with asyncio.timeout(max(left, 0.001)):
                    mine = await self._renew()
                if not mine:
                    self._log.warning("lost the lease to another holder")
                    break
                renewed = self._monotonic()
                self.renewal_seconds = renewed - sent
                attempt = renewed + interval
            except RETRYABLE as exc:
                now = self._monotonic()
                if now >= renewed + deadline:
                    self._log.warning("could not renew the lease in time", error=_reason(exc))
                    break
                attempt = min(now + interval / 4, renewed + deadline)
        self.is_leader = False

    async def release(self) -> None:
        """Give the Lease up, so that another candidate takes it at once (a no-op when
        this candidate does not lead)."""
        lease, leading, self.is_leader = self._lease, self.is_leader, False
        if not leading or lease is None:
            return
        released = {"holderIdentity": "", "leaseDurationSeconds": 1, "renewTime": self._now()}
        try:  # bounded as client-go's release: a stopping process does not wait for ever
            async with asyncio.timeout(self.settings.timing.renew_deadline):
                if await self._write_while_mine(released):
                    self._log.info("released the lease")
        except RETRYABLE as exc:  # it will expire on its own
            self._log.warning("cannot release the lease", error=_reason(exc))

    # steps -----------------------------------------------------------------------------

    async def _try_acquire(self) -> bool:
        try:
            lease = await self._get()
        except KubeError as exc:
            if exc.status != 404:
                raise
            return await self._create()
        now = self._monotonic()
        self._sighting = Sighting.update(self._sighting, lease, now)
        holder = lease.spec.holder_identity
        me = self.settings.identity
        duration = lease.spec.lease_duration_seconds or self.settings.timing.duration
        if not self._sighting.claimable_by(me, duration, now):
            return False
        spec: dict[str, Any] = self._claim()
        if holder != me:
            transitions = lease.spec.lease_transitions + 1
            spec |= {"acquireTime": spec["renewTime"], "leaseTransitions": transitions}
        try:
            self._lease = await self._patch(lease, spec)
        except KubeError as exc:
            if exc.status == 409:  # another candidate was quicker
                return False
            raise
        return True

    async def _renew(self) -> bool:
        """True when renewed; False when the Lease now names another holder."""
        return await self._write_while_mine(self._claim())

    async def _write_while_mine(self, spec: dict[str, Any]) -> bool:
        """Write `spec` into the Lease if it names this candidate as its holder: True when
        written, False when it now names another. A 409 means the Lease changed since it
        was last read or written here: someone else's write, or one of ours whose answer
        never came (a renewal cancelled in flight by a graceful stop), so read it again."""
        lease = self._lease
        while lease is not None and lease.spec.holder_identity == self.settings.identity:
            try:
                self._lease = await self._patch(lease, spec)
                return True
            except KubeError as exc:
                if exc.status != 409:
                    raise
            lease = await self._get()
        return False

    async def _create(self) -> bool:
        now = self._now()
        body = {
            "apiVersion": API_VERSION,
            "kind": "Lease",
            "metadata": {"name": self.settings.name, "namespace": self.settings.namespace},
            "spec": {**self._claim(now), "acquireTime": now, "leaseTransitions": 0},
        }
        try:
            self._lease = _decode(await self.kube.request("POST", self._path(), body=body))
        except KubeError as exc:
            if exc.status == 409:  # another candidate created it first
                return False
            raise
        return True

    # API ---------------------------------------------------------------------------------

    def _claim(self, now: str | None = None) -> dict[str, Any]:
        return {
            "holderIdentity": self.settings.identity,
            "leaseDurationSeconds": self.settings.timing.lease_duration_seconds,
            "renewTime": now or self._now(),
        }

    def _now(self) -> str:
        return micro_time(self._wall())

    def _path(self, name: str = "") -> str:
        path = f"/apis/{API_VERSION}/namespaces/{self.settings.namespace}/leases"
        return f"{path}/{name}" if name else path

    async def _get(self) -> Lease:
        return _decode(await self.kube.request("GET", self._path(self.settings.name)))

    async def _patch(self, lease: Lease, spec: dict[str, Any]) -> Lease:
        """A merge patch guarded by the resourceVersion it was computed from."""
        body = {"metadata": {"resourceVersion": lease.metadata.resource_version}, "spec": spec}
        data = await self.kube.request(
            "PATCH", self._path(self.settings.name), body=body, content_type=MERGE_PATCH
        )
        return _decode(data)


def _reason(exc: BaseException) -> str:
    """What failed, also for the exceptions whose text is empty (a timeout's)."""
    return str(exc) or type(exc).__name__


class ElectionThread:
    """A `LeaderElection` on a thread of its own, with its own event loop and its own
    client (`connected_like` the process's), so that its renewals never wait for the
    process's loop: client-go's LeaderElector.renew runs on its own goroutine the same way.

        async with ElectionThread(kube, settings).running() as election:
            await election.acquire()  # leading: renewed on the thread from now on
            await election.hold()     # returns once the Lease is lost
            await election.release()

    The methods are awaited on the process's loop; each runs on the thread's loop, and its
    answer comes back through `asyncio.wrap_future` (`call_soon_threadsafe`). Acquiring
    runs there too: the Lease's state (its last resourceVersion, the sighting of a claim)
    has one owner, a busy standby (the decider and actuator run on every replica) takes
    over as soon as an idle one, and renewal starts the moment the Lease is won. The
    thread also measures how long the process's loop is held (`loop_lag`), which no task
    on that loop can see while it happens.
    """

    def __init__(self, kube: Kube, settings: LeaseSettings) -> None:
        self._kube = kube
        self.settings = settings
        self._loop: asyncio.AbstractEventLoop | None = None
        # owned by the thread's loop
        self._election: LeaderElection | None = None
        self._holding: asyncio.Task[None] | None = None
        self._probing: asyncio.Task[None] | None = None
        self._client = contextlib.AsyncExitStack()
        #: the lag of the loop `running()` is entered on, once it is
        self.loop_lag: LoopLag | None = None

    @property
    def is_leader(self) -> bool:
        return self._election is not None and self._election.is_leader

    @property
    def renewal_seconds(self) -> float:
        """How long the last renewal took (0 before the first)."""
        return self._election.renewal_seconds if self._election is not None else 0.0

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[ElectionThread]:
        """The thread, from its client's opening to its Lease's release: a leader that
        leaves this gives the Lease up before the thread (which the interpreter waits for
        at exit) ends, even when it is cancelled again meanwhile."""
        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=_serve, args=(loop,), name=f"lease {self.settings.name}")
        thread.start()
        self._loop = loop
        self.loop_lag = LoopLag(asyncio.get_running_loop())
        try:
            await self._on_thread(self._open())
            yield self
        finally:
            closed = asyncio.run_coroutine_threadsafe(self._close(), loop)
            closed.add_done_callback(lambda _: loop.call_soon_threadsafe(loop.stop))
            # cancelled again meanwhile, this returns at once: the thread still releases
            # the Lease, then stops and closes its loop on its own
            await asyncio.shield(asyncio.wrap_future(closed))
            thread.join()  # its loop stops as `closed` completes: at once

    async def acquire(self) -> None:
        """Return once this candidate holds the Lease (renewed from then on)."""
        await self._on_thread(self._acquire())

    async def hold(self) -> None:
        """Return once the Lease is lost or gone stale (cancelling this leaves the renewals
        to `release`)."""
        await self._on_thread(self._held())

    async def release(self) -> None:
        """Stop renewing and give the Lease up (a no-op when this candidate does not lead)."""
        await self._on_thread(self._release())

    async def _on_thread(self, step: Coroutine[Any, Any, T]) -> T:
        assert self._loop is not None, "ElectionThread used outside `running()`"
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(step, self._loop))

    # on the thread -----------------------------------------------------------------------

    async def _open(self) -> None:
        kube = await self._client.enter_async_context(connected_like(self._kube))
        self._election = LeaderElection(kube, self.settings)
        if self.loop_lag is not None:
            self._probing = asyncio.create_task(self.loop_lag.measure(), name="loop lag")

    async def _acquire(self) -> None:
        assert self._election is not None
        await self._election.acquire()
        self._holding = asyncio.create_task(self._election.hold(), name="lease renewal")

    async def _held(self) -> None:
        if self._holding is not None:
            await asyncio.shield(self._holding)

    async def _release(self) -> None:
        holding, self._holding = self._holding, None
        if holding is not None:
            holding.cancel()
            await asyncio.gather(holding, return_exceptions=True)
        if self._election is not None:
            await self._election.release()

    async def _close(self) -> None:
        if self._probing is not None:  # before the loop it probes may close
            self._probing.cancel()
            await asyncio.gather(self._probing, return_exceptions=True)
        try:
            await self._release()
        finally:
            await self._client.aclose()


def _serve(loop: asyncio.AbstractEventLoop) -> None:
    """The election thread's body: its loop runs until stopped, then is closed by the
    thread itself, whether or not anyone is still waiting to join it."""
    try:
        loop.run_forever()
    finally:
        loop.close()
