"""Carry out one decision against the Kubernetes API, so that doing it twice changes nothing.

Decisions arrive at least once, so each is written as create-if-absent, delete-if-present
(a pod's uid as precondition, so a newer pod of the same name survives) or a
resourceVersion-guarded update retried on conflict. A decision about a Job that is gone,
or that was deleted and recreated under its name (another uid), is skipped: it was made
for a dead incarnation. A permanent failure (an invalid manifest, a forbidden write) is
logged, reported as a Warning Event on the Job, and the decision counts as done, so
that one bad job never holds up the jobs behind it on its partition; transient failures
never get here (`client.Api` retries them). A create the API server refuses (a full
ResourceQuota's 403, a 422) is reported the same way and, as a `CreateFailed` fact on the
log, to the decider, which retries the job's sync as Volcano requeues it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from typing import Any

import msgspec
import structlog

from lavalog.controller.actuator.core import job_events, paths, volumes
from lavalog.controller.actuator.core.held_jobs import HeldJobs, phase_of, uid_of
from lavalog.controller.actuator.core.job import JobView
from lavalog.controller.actuator.core.plugins import KeyGenerator
from lavalog.controller.actuator.core.podgroup import build_podgroup
from lavalog.controller.actuator.core.pods import build_pods
from lavalog.controller.actuator.core.priority import Priority, priority_of
from lavalog.controller.actuator.core.resources import (
    KEEP_EXISTING_KINDS,
    build_plugin_resources,
    plugin_resource_paths,
)
from lavalog.controller.actuator.core.staleness import pods_are_stale, status_is_older, still_wanted
from lavalog.controller.actuator.core.status import merged_status
from lavalog.controller.actuator.service.client import Api, Obj
from lavalog.controller.actuator.service.counters import Counters
from lavalog.controller.actuator.service.ratelimit import prioritized
from lavalog.controller.actuator.service.recorder import EventRecorder
from lavalog.controller.actuator.service.sshkeys import generate_key_pair
from lavalog.controller.actuator.service.timing import log_fields
from lavalog.controller.decision_logs import carried_out, decision_fields, lag
from lavalog.controller.kube import KubeError
from lavalog.controller.logs import writes
from lavalog.events.decisions import (
    AnyDecision,
    Decision,
    JobDelete,
    PluginResourcesDelete,
    PluginResourcesEnsure,
    PodGroupCreate,
    PodGroupDelete,
    PodRef,
    PodsCreate,
    PodsKill,
    PodsReplace,
    StatusWrite,
)
from lavalog.events.observations import MAX_REQUEUE_NUM, CreateFailed
from lavalog.events.topics import split_job_key
from lavalog.events.volcano import reasons
from lavalog.events.volcano.api import PODGROUP_API_VERSION, RUN_OVER_PHASES

#: a refused create reported, as the decider learns of it (`CreateFailed` on the log)
OnRefused = Callable[[CreateFailed], Awaitable[None]]
#: a handler returns False when it skipped the decision (its Job incarnation is gone, or
#: the Job is already past it: see `staleness`)
Handler = Callable[[Any], Awaitable[bool]]

_PODGROUP_FIELDS = (
    "minMember",
    "minTaskMember",
    "queue",
    "minResources",
    "priorityClassName",
    "subGroupPolicy",
)
_log = structlog.get_logger("lavalog.actuator")


class Applier:
    """`await applier.apply(decision)`; safe to call concurrently for different jobs."""

    def __init__(
        self,
        api: Api,
        counters: Counters,
        *,
        pod_concurrency: int = 16,
        keygen: KeyGenerator = generate_key_pair,
        cached_jobs: int = 10_000,
        on_refused: OnRefused | None = None,
        max_requeues: int = MAX_REQUEUE_NUM,
        phase_events: bool = False,
    ) -> None:
        self._api = api
        #: `--phase-events`: phase changes as Events (lavalog's own; Volcano writes none)
        self._phase_events = phase_events
        self._counters = counters
        self._on_refused = on_refused
        #: `--max-requeue-num`, told to the decider with each refusal
        self._max_requeues = max_requeues
        #: Events are written off the lanes: `await applier.events.run()` writes them
        self.events = EventRecorder(api, counters)
        self._pod_concurrency = pod_concurrency
        self._keygen = keygen
        #: the Jobs as last read, written or watched (`job_informer` keeps them current)
        self.jobs = HeldJobs(cached_jobs)
        self._priorities: dict[str, int] = {}
        reported: dict[type[Decision], Handler] = dict.fromkeys(job_events.REPORTED, self._report)
        self._handlers: dict[type[Decision], Handler] = {
            **reported,
            PodGroupCreate: self._create_podgroup,
            PodGroupDelete: self._delete_podgroup,
            PluginResourcesEnsure: self._ensure_plugin_resources,
            PluginResourcesDelete: self._delete_plugin_resources,
            PodsCreate: self._create_pods,
            PodsKill: self._kill_pods,
            PodsReplace: self._replace_pods,
            StatusWrite: self._write_status,
            JobDelete: self._delete_job,
        }

    async def apply(self, decision: AnyDecision, *, priority: Priority | None = None) -> None:
        """Carry out `decision`; returns once it is done, skipped, or failed for good. Its
        API calls wait for the budget at `priority` (by default the decision's own)."""
        handler = self._handlers.get(type(decision))
        reported = type(decision) in job_events.REPORTED
        # a cancelled timer, an admission: the decider's own records; a phase change
        # without --phase-events: nothing to write
        if handler is None or (reported and not self.reported(decision)):
            self._counters.ignored += 1
            return
        if not reported and self.jobs.is_gone(decision.job_uid):
            # its Job was deleted: its pods and PodGroup go with it (owner references)
            self._skipped(decision)
            return
        # every line logged meanwhile (API retries included) names the job and decision, and
        # every API call waits for the budget as this kind of decision does
        with (
            _naming(decision),
            prioritized(priority_of(decision) if priority is None else priority),
        ):
            try:
                done = await handler(decision)
            except Refused as refusal:
                await self._refused(decision, refusal)
                return
            except Exception as exc:
                self._counters.failed += 1
                _log.error("decision failed", error=str(exc))
                self._event(decision, job_events.failure(decision, exc), suffix="#failed")
                return
            if not done:
                self._skipped(decision)
                return
            self._counters.applied += 1
            if writes(logging.INFO):  # else the line's fields are made for nothing
                _log.info(
                    carried_out(decision),
                    lag=lag(decision),
                    **log_fields(decision),
                    **decision_fields(decision),
                )

    def _skipped(self, decision: Decision) -> None:
        self._counters.skipped += 1
        if writes(logging.INFO):
            _log.info(
                "decision skipped: job gone or past it", lag=lag(decision), **log_fields(decision)
            )

    async def _refused(self, decision: Decision, refusal: Refused) -> None:
        """Report creates the API server refused: a Warning Event in Volcano's words, and
        the fact on the log, from which the decider retries as Volcano requeues. The
        decision is done (what could be created was)."""
        self._counters.refused += 1
        errors = {name: error.message for name, error in refusal.errors.items()}
        _log.warning("creates refused", kind=refusal.kind, refused=errors, lag=lag(decision))
        self._event(decision, job_events.refused(decision, refusal.kind, errors), suffix="#refused")
        if self._on_refused is None:
            return
        first = next(iter(refusal.errors.values()))
        await self._on_refused(
            CreateFailed(
                id=f"{decision.id}/refused",
                key=decision.key,
                job_uid=decision.job_uid,
                time=time.time(),
                decision=decision.id,
                object_kind=refusal.kind,
                names=tuple(sorted(refusal.errors)),
                job_version=refusal.job_version,
                code=first.status,
                reason=first.reason,
                message=first.message,
                max_requeues=self._max_requeues,
            )
        )

    # handlers ------------------------------------------------------------------------

    def reported(self, decision: Decision) -> list[Obj]:
        """The Event manifests of a decision that is only Events (`job_events.REPORTED`)."""
        return job_events.reported(decision, phase_events=self._phase_events)

    async def _report(self, decision: Decision) -> bool:
        """Queue its Events (the actuator's service records them without a lane)."""
        self.events.record(self.reported(decision))
        return True

    async def _create_podgroup(self, decision: PodGroupCreate) -> bool:
        job = self._job_at_generation(decision) or await self._read_job(decision)
        if job is None:
            return False
        job = await self._ensure_volumes(decision, job)
        if job is None:
            return False
        priorities = await self._priorities_of(job)
        podgroup = build_podgroup(job, decision, priorities=priorities)
        try:
            await self._api.upsert(podgroup, _merge_podgroup)
        except KubeError as exc:
            raise Refused("PodGroup", {decision.podgroup: exc}) from exc
        return True

    async def _ensure_volumes(self, decision: PodGroupCreate, job: Obj) -> Obj | None:
        """Volcano's `createJobIOIfNotExist`, which runs just before the PodGroup is made:
        name the unnamed claims in the Job's spec, create them, and report claims the
        user named that do not exist (their pods wait for them). The Job as written, or
        None when it is gone."""

        def name_claims(current: Obj) -> Obj | None:
            return (
                volumes.with_claim_names(current) if uid_of(current) == decision.job_uid else None
            )

        if volumes.with_claim_names(job) is not None:
            path = paths.job(*split_job_key(decision.key))
            written = await self._api.update(path, name_claims, current=job)
            if written is None or uid_of(written) != decision.job_uid:
                return None
            job = written
            self.jobs.hold(job)
        for claim in volumes.claims_to_create(job):
            try:
                await self._api.create(paths.of_manifest(claim)[0], claim)
            except KubeError as exc:
                raise Refused("PersistentVolumeClaim", {claim["metadata"]["name"]: exc}) from exc
        namespace = split_job_key(decision.key)[0]
        for name in volumes.claims_to_find(job):
            if await self._api.get(paths.named("v1", "PersistentVolumeClaim", namespace, name)):
                continue
            missing = job_events.Notice(
                reasons.WARNING,
                reasons.PVC_ERROR,
                f"pvc {name} is not found, the job will be in the Pending state until the PVC "
                "is created",
            )
            self._event(decision, missing, suffix=f"#pvc/{name}")
        return job

    async def _delete_podgroup(self, decision: PodGroupDelete) -> bool:
        namespace, _ = split_job_key(decision.key)
        path = paths.named(PODGROUP_API_VERSION, "PodGroup", namespace, decision.podgroup)
        return await self._api.delete(path, uid=decision.podgroup_uid)

    async def _ensure_plugin_resources(self, decision: PluginResourcesEnsure) -> bool:
        job = self._job_at_generation(decision) or await self._read_job(decision)
        if job is None or phase_of(job) in RUN_OVER_PHASES:
            # Carried out again after the run ended, which removed its objects: not made
            # again. (A resumed run's status, ahead of it in its lane, is written first.)
            return False
        # In a thread: the ssh plugin's key generation blocks.
        manifests = await asyncio.to_thread(
            build_plugin_resources, job, decision, keygen=self._keygen
        )
        await _all(self._api.upsert(m, _merge_plugin_resource) for m in manifests)
        return True

    async def _delete_plugin_resources(self, decision: PluginResourcesDelete) -> bool:
        # Only for the live incarnation: a Job recreated under the name owns these names now
        # (a gone Job's objects go with it, through their owner references).
        if await self._read_job(decision) is None:
            return False
        await _all(self._api.delete(path) for path in plugin_resource_paths(decision))
        return True

    def forget_jobs(self) -> None:
        """Drop the Jobs held: called when partitions go to another member, whose writes
        this member may not have seen yet (so a decision it carries out again later is
        checked against the Job as it is, not as it was here)."""
        self.jobs.clear()

    async def _create_pods(self, decision: PodsCreate) -> bool:
        job = self._job_at_generation(decision) or await self._read_job(decision)
        manifests = _pods_to_make(job, decision) if job is not None else []
        if not manifests:
            return False
        collection = paths.collection("v1", "Pod", split_job_key(decision.key)[0])
        slots = asyncio.Semaphore(self._pod_concurrency)

        async def create(pod: Obj) -> None:
            async with slots:
                await _refusable(self._api.create(collection, pod))

        await _all_or_refused(
            decision.job_version, {p["metadata"]["name"]: create(p) for p in manifests}
        )
        return True

    async def _kill_pods(self, decision: PodsKill) -> bool:
        namespace, _ = split_job_key(decision.key)
        await _all(
            self._api.delete(paths.named("v1", "Pod", namespace, ref.name), uid=ref.uid)
            for ref in decision.pods
        )
        return True

    async def _replace_pods(self, decision: PodsReplace) -> bool:
        """Delete each finished pod (its uid as precondition) and create it again once it is
        gone. The creates follow PodsCreate's rules: none for a Job past the decision's
        version or with fewer replicas now; the deletes are made anyway, as PodsKill's."""
        job = self._job_at_generation(decision) or await self._read_job(decision)
        if job is None:
            return False
        manifests = {pod["metadata"]["name"]: pod for pod in _pods_to_make(job, decision)}
        namespace = split_job_key(decision.key)[0]
        collection = paths.collection("v1", "Pod", namespace)

        async def replace(ref: PodRef) -> None:
            path = paths.named("v1", "Pod", namespace, ref.name)
            await self._api.delete(path, uid=ref.uid)
            if ref.name in manifests:
                await self._api.create_once_gone(collection, path, manifests[ref.name], uid=ref.uid)

        await _all_or_refused(
            decision.job_version, {ref.name: replace(ref) for ref in decision.pods}
        )
        return True

    async def _write_status(self, decision: StatusWrite) -> bool:
        status = msgspec.to_builtins(decision.status)

        def change(job: Obj) -> Obj | None:
            current = job.get("status")
            if uid_of(job) != decision.job_uid:
                return None
            if status_is_older(current, decision.status):
                return None  # carried out again after a later status was written
            merged = merged_status(current, status)
            return None if merged == current else {**job, "status": merged}

        path = paths.job(*split_job_key(decision.key))
        cached = self.jobs.get(decision.key, decision.job_uid)
        written = await self._api.update(path, change, subresource="status", current=cached)
        if written is None or uid_of(written) != decision.job_uid:
            self.jobs.gone(decision.job_uid)
            return False
        self.jobs.hold(written)
        return True

    async def _delete_job(self, decision: JobDelete) -> bool:
        path = paths.job(*split_job_key(decision.key))
        self.jobs.drop(decision.key)
        return await self._api.delete(path, uid=decision.job_uid, propagation="Background")

    # helpers -------------------------------------------------------------------------

    async def _read_job(self, decision: Decision) -> Obj | None:
        """The Job as it is now, if it is still the incarnation the decision is about."""
        job = await self._api.get(paths.job(*split_job_key(decision.key)))
        if job is None or uid_of(job) != decision.job_uid:
            self.jobs.gone(decision.job_uid)
            return None
        self.jobs.hold(job)
        return job

    def _job_at_generation(
        self, decision: PodGroupCreate | PluginResourcesEnsure | PodsCreate | PodsReplace
    ) -> Obj | None:
        """The Job held (as last read, written or watched here), if it is the decision's
        incarnation and at least at the generation the decision was made from: its spec is
        then as new as the decider's, and its status at least the last one this actuator
        wrote (its lane writes the job's statuses in log order), so reading it again would
        tell nothing new."""
        job = self.jobs.get(decision.key, decision.job_uid)
        if job is None or decision.job_generation == 0:
            return None
        generation = int((job.get("metadata") or {}).get("generation") or 0)
        return job if generation >= decision.job_generation else None

    async def _priorities_of(self, job: Obj) -> dict[str, int]:
        """Values of the PriorityClasses the Job's templates name (absent ones count as 0)."""
        tasks = JobView.of(job).spec.tasks
        names = {(t.template.get("spec") or {}).get("priorityClassName", "") for t in tasks}
        for name in sorted(n for n in names if n and n not in self._priorities):
            found = await self._api.get(paths.priority_class(name))
            if found is not None:
                self._priorities[name] = int(found.get("value", 0))
        return {n: self._priorities[n] for n in names if n in self._priorities}

    def _event(self, decision: Decision, what: job_events.Notice, suffix: str = "") -> None:
        self.events.record([job_events.event_manifest(decision, what, suffix=suffix)])


@contextlib.contextmanager
def _naming(decision: Decision) -> Iterator[None]:
    """Lines logged in this block name the job and the decision. structlog's
    `bound_contextvars` does the same, after copying the whole context to find what it
    replaces; the tokens of the variables set restore them without that."""
    tokens = structlog.contextvars.bind_contextvars(job=decision.key, decision=decision.id)
    try:
        yield
    finally:
        structlog.contextvars.reset_contextvars(**tokens)


def _pods_to_make(job: Obj, decision: PodsCreate | PodsReplace) -> list[Obj]:
    """The manifests of the decision's pods that `job` still wants: none for a Job past the
    decision's version (`pods_are_stale`), none beyond a task's replicas now."""
    if pods_are_stale(job.get("status"), decision.job_version):
        return []
    wanted = still_wanted(JobView.of(job).spec, decision.pods)
    return build_pods(job, msgspec.structs.replace(decision, pods=wanted)) if wanted else []


async def _all(calls: Iterable[Awaitable[object]]) -> None:
    """Run the calls concurrently, let each finish, then raise the first failure."""
    results = await asyncio.gather(*calls, return_exceptions=True)
    for result in results:
        if isinstance(result, BaseException):
            raise result


async def _refusable(create: Awaitable[object]) -> None:
    """A pod create whose error answer (a full quota's 403, a 422) is a refusal."""
    try:
        await create
    except KubeError as exc:
        raise _PodRefused(exc) from exc


async def _all_or_refused(job_version: int, pods: Mapping[str, Awaitable[object]]) -> None:
    """Run the pods' calls concurrently and let each finish; the creates refused are
    raised together as `Refused`, any other failure as it is."""
    results = await asyncio.gather(*pods.values(), return_exceptions=True)
    refused: dict[str, KubeError] = {}
    for name, result in zip(pods, results, strict=True):
        if isinstance(result, _PodRefused):
            refused[name] = result.error
        elif isinstance(result, BaseException):
            raise result
    if refused:
        raise Refused("Pod", refused, job_version=job_version)


class _PodRefused(Exception):
    def __init__(self, error: KubeError) -> None:
        super().__init__(str(error))
        self.error = error


class Refused(Exception):
    """The API server refused creates of `kind` (Pod, PodGroup, PersistentVolumeClaim):
    name -> its error answer. Transient answers never get here (`client.Api` retries them)."""

    def __init__(self, kind: str, errors: Mapping[str, KubeError], *, job_version: int = 0) -> None:
        super().__init__(f"{kind} refused: " + "; ".join(str(e) for e in errors.values()))
        self.kind = kind
        self.errors = dict(errors)
        self.job_version = job_version


def _merge_podgroup(existing: Obj, desired: Obj) -> Obj | None:
    """Volcano's `createOrUpdatePodGroup`: bring the gang's size, queue and resources up to date."""
    spec = dict(existing.get("spec") or {})
    for field in _PODGROUP_FIELDS:
        if field in desired["spec"]:
            spec[field] = desired["spec"][field]
    if spec == existing.get("spec"):
        return None
    return {**existing, "spec": spec}


def _merge_plugin_resource(existing: Obj, desired: Obj) -> Obj | None:
    """ConfigMaps follow the job (hosts change on scaling); other kinds are kept as they are."""
    if desired["kind"] in KEEP_EXISTING_KINDS or existing.get("data") == desired.get("data"):
        return None
    return {**existing, "data": desired.get("data")}
