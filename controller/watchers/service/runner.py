"""The watchers as one service: win the Lease, then turn four kinds' changes into facts.

    service = WatcherService(kube=kube, kafka=settings, identity=pod_name)
    await service.run()   # until cancelled; service.is_leader, service.ready for /readyz

Each kind runs its own pipeline, `watch` -> `Translator` -> `Publisher`: one batch of
changes is translated and delivered before the watch takes the next, so its position
never runs ahead of what Kafka holds. Commands aimed at a Volcano Job are then deleted,
as Volcano's controller deletes those it takes. A leader that loses its Lease cancels the
pipelines and becomes a candidate again; their memory goes with them, and the next
leader starts with a full list (whose facts, already published, keep their ids).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import msgspec
import structlog
from aiokafka.errors import KafkaError

from lavalog.controller.decider.core.state import JobState
from lavalog.controller.kafka import KafkaSettings
from lavalog.controller.kafka.local_delivery import LocalDelivery
from lavalog.controller.kube import Kube, KubeError, is_transient
from lavalog.controller.retry import retry
from lavalog.controller.watchers.core import translate
from lavalog.controller.watchers.core.changes import Change, ChangeType
from lavalog.controller.watchers.core.inventory import PodInventory
from lavalog.controller.watchers.core.lease import LeaseTiming
from lavalog.controller.watchers.core.objects import Command, Job, KubeObject, List
from lavalog.controller.watchers.core.translate import Translation, Translator
from lavalog.controller.watchers.service import unwatched, watch
from lavalog.controller.watchers.service.leader import ElectionThread, LeaseSettings
from lavalog.controller.watchers.service.publisher import Publisher, open_publisher
from lavalog.controller.watchers.service.watch import Mark, Resource, WatchSettings
from lavalog.events.observations import AnyObservation

log = structlog.get_logger("lavalog.watchers")

T = TypeVar("T", bound=KubeObject)


@dataclass(frozen=True, slots=True)
class Watched(Generic[T]):
    """One watched kind: where to watch it and how it becomes observations."""

    resource: Resource[T]
    translation: Translation[T]


WATCHED: tuple[Watched[Any], ...] = (
    Watched(watch.JOBS, translate.JOBS),
    Watched(watch.PODS, translate.PODS),
    Watched(watch.PODGROUPS, translate.PODGROUPS),
    Watched(watch.COMMANDS, translate.COMMANDS),
)


class WatcherService:
    """Leader-elected watchers publishing to `lavalog.observed`."""

    def __init__(
        self,
        *,
        kube: Kube,
        kafka: KafkaSettings,
        namespace: str | None = None,
        identity: str,
        lease_namespace: str = "default",
        lease_name: str = "lavalog-watchers",
        lease: LeaseTiming | None = None,
        watch_settings: WatchSettings | None = None,
        local: LocalDelivery | None = None,
    ) -> None:
        """`local`: where to hand each observation delivered to this process's decider."""
        self._kube = kube
        self._kafka = kafka
        self._local = local
        self._namespace = namespace
        self._watch_settings = watch_settings or WatchSettings()
        self._election = ElectionThread(
            kube,
            LeaseSettings(
                identity=identity,
                namespace=lease_namespace,
                name=lease_name,
                timing=lease or LeaseTiming(),
            ),
        )
        self._connected = False
        #: kinds whose list has been published since this replica became the leader
        self._listed: set[str] = set()
        #: `terms`: times this replica became the leader, each term starting with a full
        #: list of the cluster (`lavalog_watchers_terms_total`)
        self.counters = {"terms": 0}

    @property
    def is_leader(self) -> bool:
        return self._election.is_leader

    def gauges(self) -> dict[str, float]:
        """On /metrics as `lavalog_watchers_<name>`."""
        lag = self._election.loop_lag
        return {
            "lease_renewal_seconds": self._election.renewal_seconds,
            "event_loop_lag_seconds": lag.longest() if lag is not None else 0.0,
        }

    @property
    def ready(self) -> bool:
        """Connected to Kafka, and as leader caught up with every kind (a standby is ready
        to take over)."""
        caught_up = len(self._listed) == len(WATCHED)
        return self._connected and (caught_up or not self.is_leader)

    async def run(self) -> None:
        """Lead and watch, stand by, lead again...: until cancelled."""
        async with (
            open_publisher(self._kafka, local=self._local) as publisher,
            self._election.running(),
        ):
            self._connected = True
            try:
                while True:
                    await self._election.acquire()
                    self.counters["terms"] += 1
                    try:
                        await self._lead(publisher)
                    finally:
                        self._listed.clear()
                        await self._election.release()  # a no-op once the lease is lost
            finally:
                self._connected = False

    async def _lead(self, publisher: Publisher) -> None:
        """Watch while holding the Lease; return when it is lost."""
        holding = asyncio.create_task(self._election.hold(), name="lease")
        watching = asyncio.create_task(self._watch_all(publisher), name="watchers")
        try:
            await asyncio.wait({holding, watching}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            holding.cancel()
            watching.cancel()
            await asyncio.gather(holding, watching, return_exceptions=True)
        failure = None if watching.cancelled() else watching.exception()
        if failure is not None:  # a bug: the watchers retry every error they expect
            raise failure

    async def _watch_all(self, publisher: Publisher) -> None:
        states = await self._decider_view()
        known: dict[str, Mapping[str, Any]] = {
            watch.JOBS.plural: unwatched.known_jobs(states, self._namespace),
            watch.PODGROUPS.plural: unwatched.known_podgroups(states, self._namespace),
        }
        async with asyncio.TaskGroup() as group:
            for watched in WATCHED:
                plural = watched.resource.plural
                group.create_task(
                    self._follow(watched, publisher, known.get(plural)), name=f"watch {plural}"
                )

    async def _decider_view(self) -> list[JobState]:
        """What the decider believes exists, read before the first list (so that nothing
        the lists show can be missing from it); retried until Kafka answers."""
        states = await retry(
            lambda: unwatched.decider_view(self._kafka),
            delays=self._watch_settings.retry,
            transient=lambda exc: isinstance(exc, KafkaError),
            on_retry=lambda exc, delay: log.warning(
                "cannot read the decider's view, retrying", error=str(exc), delay=round(delay, 2)
            ),
        )
        log.info("decider's view read", jobs=len(states))
        return states

    async def _follow(
        self, watched: Watched[T], publisher: Publisher, known: Mapping[str, T] | None = None
    ) -> None:
        """One kind's pipeline: changes, the observations that matter, delivered. The pod
        pipeline also publishes what each list showed of every job's pods. `known`: the
        objects the decider has, which the first list reports as deleted if they are gone."""
        translator = Translator(watched.translation)
        inventory = PodInventory() if watched.resource is watch.PODS else None
        stream = watch.watch(
            self._kube,
            watched.resource,
            namespace=self._namespace,
            settings=self._watch_settings,
            known=known,
        )
        async with contextlib.aclosing(stream) as batches:
            async for batch in batches:
                if batch is Mark.LISTED:
                    if inventory is not None:
                        await self._publish_listing(inventory, publisher)
                    self._listed.add(watched.resource.plural)
                    continue
                now = time.time()
                observations = [o for c in batch if (o := _observe(translator, c, now))]
                if observations:
                    await publisher.publish(observations)
                if inventory is not None:
                    inventory.apply(batch)  # type: ignore[arg-type]
                if watched.resource is watch.COMMANDS:
                    await self._retire_commands(batch)  # type: ignore[arg-type]

    async def _retire_commands(self, batch: list[Change[Command]]) -> None:
        """Delete the job Commands of a batch now that the log holds them, as Volcano's
        controller deletes each Command it takes: a Command is an order given once, and
        the decider acts on it once (a relist before the delete re-publishes it under
        the same id). Transient failures are retried; another (say, RBAC without
        `delete`) is logged and the Command stays."""
        for change in batch:
            command = change.obj
            if change.type is ChangeType.DELETED or not translate.command_for_a_job(command):
                continue
            meta = command.metadata
            path = f"{watch.COMMANDS.prefix}/namespaces/{meta.namespace}/commands/{meta.name}"
            delete = functools.partial(
                self._kube.request, "DELETE", path, body={"preconditions": {"uid": meta.uid}}
            )
            try:
                await retry(
                    delete,
                    delays=self._watch_settings.retry,
                    transient=is_transient,
                )
            except KubeError as exc:
                if exc.status not in (404, 409):  # else gone already, or another Command now
                    log.warning("command not deleted", command=meta.name, error=str(exc))

    async def _publish_listing(self, inventory: PodInventory, publisher: Publisher) -> None:
        jobs = await watch.list_all_retried(
            self._kube, watch.JOBS, self._namespace, self._watch_settings, _JOB_LIST
        )
        listing = inventory.listing(jobs, time.time())
        if listing:
            await publisher.publish(listing)


_JOB_LIST = msgspec.json.Decoder(List[Job])


def _observe(translator: Translator[T], change: Change[T], now: float) -> AnyObservation | None:
    if change.type is ChangeType.DELETED:
        return translator.deleted(change.obj, now)
    return translator.changed(change.obj, now)
