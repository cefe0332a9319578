"""Scripted logs: what a cluster would report about one job, step by step, and (where a
test wants a whole recorded log) what the decider answered.

Tests, the shipped examples and the benchmarks write lifecycles with this instead of
raw JSON: `JobScript(...).submit().podgroup("Inqueue").pod("worker", 0, "Running")...`;
`.events` are the observations (the decider's input), `.log` the same with the decisions
`.decide(...)` records on them, in order. Ids, uids and times are deterministic, so a
script always yields the same log. Test support, not part of the installed package:
tests import it as `tests.scenarios`, and so do the benchmarks and the examples' writer
(`tests/examples/scripts.py`), which run from the repository's root.
"""

from __future__ import annotations

from typing import Any, Self

import msgspec

from lavalog.events.codec import LogEvent
from lavalog.events.decisions import AnyDecision, PhaseChanged, PodRef
from lavalog.events.observations import (
    AnyObservation,
    CommandIssued,
    ContainerEnd,
    JobDeleted,
    JobObserved,
    PodDeleted,
    PodGroupCondition,
    PodGroupObserved,
    PodObserved,
    PodsListed,
    TimerFired,
)

#: 2026-01-01T00:00:00Z: scripts start here unless told otherwise
EPOCH = 1_767_225_600.0

#: Observation ids, as a format of the job's `key`, `uid`, `n` (the observation's place
#: among the script's observations, from 0) and `seq` (the same, from 1): by default
#: `<namespace>/<name>@<n>`.
KEY_IDS = "{key}@{n}"
#: Ids that name the job incarnation too, as the watchers' do (`<uid>/...`): two scripts
#: of one job name (deleted and submitted again) never share an id.
INCARNATION_IDS = "{uid}/{key}@{n}"

#: A decision as `decide` takes it: its type and fields, without the envelope.
Decided = tuple[type[AnyDecision], dict[str, Any]]


class JobScript:
    """The log of one job, in order, with a clock that moves `tick` seconds after each
    observation and otherwise only when told."""

    def __init__(
        self,
        name: str,
        spec: dict[str, Any] | None = None,
        *,
        namespace: str = "default",
        uid: str | None = None,
        start: float = EPOCH,
        tick: float = 1.0,
        ids: str = KEY_IDS,
    ) -> None:
        self.name = name
        self.key = f"{namespace}/{name}"
        self.uid = uid or f"uid-{namespace}-{name}"
        self.spec = spec or {}
        self.time = start
        self.tick = tick
        self.ids = ids
        self.events: list[AnyObservation] = []
        self.log: list[LogEvent] = []
        self._generation = 0
        self._pod_uids: dict[str, str] = {}
        self._incarnations: dict[str, int] = {}

    def after(self, seconds: float) -> Self:
        """Let `seconds` pass before the next observation."""
        self.time += seconds
        return self

    def at(self, time: float) -> Self:
        """Move the clock to `time` (seconds since the epoch)."""
        self.time = time
        return self

    def submit(
        self, spec: dict[str, Any] | None = None, *, annotations: dict[str, str] | None = None
    ) -> Self:
        """The job is created, or (given a new spec) updated to a new generation;
        `annotations` are its `lavalog.io/` extension annotations, if any."""
        if spec is not None:
            self.spec = spec
        self._generation += 1
        extensions = annotations or msgspec.UNSET
        return self.observe(
            JobObserved, generation=self._generation, spec=self.spec, extensions=extensions
        )

    def delete(self) -> Self:
        return self.observe(JobDeleted)

    def podgroup(
        self,
        phase: str,
        *,
        reason: str = "",
        message: str = "",
        deleted: bool = False,
        uid: str | None = None,
        conditions: tuple[PodGroupCondition, ...] | None = None,
    ) -> Self:
        """The job's PodGroup is seen in `phase` (`uid`: another PodGroup of that name),
        with the scheduler's `conditions` if given."""
        return self.observe(
            PodGroupObserved,
            podgroup=f"{self.name}-{self.uid}",
            podgroup_uid=uid or f"pg-{self.uid}",
            phase=phase,
            reason=reason,
            message=message,
            deleted=deleted,
            conditions=msgspec.UNSET if conditions is None else conditions,
        )

    def pod(
        self,
        task: str,
        index: int,
        phase: str,
        *,
        version: int = 0,
        exit_code: int | None = None,
        reason: str = "",
        restarts: int = 0,
        init_restarts: int = 0,
        ready: bool = True,
        deleting: bool = False,
        node: str = "node-0",
        uid: str | None = None,
        created: float | None = None,
        scheduled: float | None = None,
        started: float | None = None,
        finished: float | None = None,
        container: str = "",
        containers: tuple[ContainerEnd, ...] = (),
        message: str = "",
        disruption: str = "",
    ) -> Self:
        """A pod of the job is seen in `phase` (a new incarnation after `pod_deleted`);
        `uid` names this incarnation's uid instead of the generated one. `restarts`: its
        container's, `init_restarts`: its init containers'; `ready`: its containers
        report ready (while Running). `container`: whose exit code `exit_code` is;
        `containers`: the ended ones; `disruption`: its DisruptionTarget reason."""
        return self.observe(
            PodObserved,
            **self._pod_identity(task, index, version, uid),
            phase=phase,
            exit_code=exit_code,
            reason=reason,
            message=message,
            container=container or msgspec.UNSET,
            containers=containers or msgspec.UNSET,
            disruption=disruption or msgspec.UNSET,
            restart_count=restarts,
            total_restarts=restarts + init_restarts,
            containers_ready=phase == "Running" and ready,
            deleting=deleting,
            node=node,
            created=created,
            scheduled=scheduled,
            started=started,
            finished=finished,
        )

    def pods(self, task: str, count: int, phase: str, *, version: int = 0) -> Self:
        """Replicas 0..count-1 of `task` all seen in `phase`."""
        for index in range(count):
            self.pod(task, index, phase, version=version)
        return self

    def pod_deleted(
        self,
        task: str,
        index: int,
        *,
        phase: str = "Running",
        version: int = 0,
        uid: str | None = None,
        disruption: str = "",
        containers: tuple[ContainerEnd, ...] = (),
    ) -> Self:
        """The pod is gone (`disruption`: the DisruptionTarget reason it had, `containers`:
        its ended containers); the next `pod` of that name is a new incarnation."""
        self.observe(
            PodDeleted,
            **self._pod_identity(task, index, version, uid),
            phase=phase,
            disruption=disruption or msgspec.UNSET,
            containers=containers or msgspec.UNSET,
        )
        return self.new_incarnation(task, index)

    def new_incarnation(self, task: str, index: int) -> Self:
        """The next `pod` of that name is a new incarnation; alone, without `pod_deleted`:
        its predecessor's deletion was never observed (a relist shows only the new pod)."""
        name = self.pod_name(task, index)
        self._incarnations[name] = self._incarnations.get(name, 0) + 1
        self._pod_uids.pop(name, None)
        return self

    def again(self) -> Self:
        """The latest observation published once more, now and under a new id: a relist,
        a watcher repeating itself, a Job seen again after a status write."""
        last = self.last
        fields = {f: getattr(last, f) for f in last.__struct_fields__}
        for envelope in ("id", "key", "job_uid", "time"):
            del fields[envelope]
        return self.observe(type(last), **fields)

    def listed(self, *alive: tuple[str, int]) -> Self:
        """A fresh list shows exactly these pods (task, index) of the job."""
        pods = {
            self.pod_name(task, index): self._pod_uid(self.pod_name(task, index))
            for task, index in alive
        }
        return self.observe(PodsListed, pods=pods)

    def command(self, action: str, *, name: str = "") -> Self:
        return self.observe(
            CommandIssued, command=name or f"{self.name}-{action.lower()}", action=action
        )

    def timer(self, timer_id: str) -> Self:
        return self.observe(TimerFired, timer_id=timer_id)

    def pod_name(self, task: str, index: int) -> str:
        return f"{self.name}-{task}-{index}"

    def pod_refs(self, *pods: tuple[str, int]) -> tuple[PodRef, ...]:
        """References to these pods (task, index) of the job, as decisions name them."""
        return tuple(PodRef(name=self.pod_name(t, i), task=t, index=i) for t, i in pods)

    def observe(self, kind: type[AnyObservation], **fields: Any) -> Self:
        """Any observation of the job, with these fields (the others: the script's)."""
        observation = kind(
            id=self.ids.format(
                key=self.key, uid=self.uid, n=len(self.events), seq=len(self.events) + 1
            ),
            key=self.key,
            job_uid=self.uid,
            time=self.time,
            **fields,
        )
        self.events.append(observation)
        self.log.append(observation)
        self.time += self.tick
        return self

    def decide(self, *decisions: Decided) -> Self:
        """The decisions taken on the last observation, as the decider records them:
        caused by it, at its time, with ids `<cause>#<n>`."""
        cause = self.last
        for n, (kind, fields) in enumerate(decisions):
            self.log.append(
                kind(
                    id=f"{cause.id}#{n}",
                    key=self.key,
                    job_uid=self.uid,
                    time=cause.time,
                    cause=cause.id,
                    **fields,
                )
            )
        return self

    @property
    def last(self) -> AnyObservation:
        """The latest observation (a test's single stimulus, say)."""
        assert self.events, "nothing observed yet"
        return self.events[-1]

    def _pod_identity(self, task: str, index: int, version: int, uid: str | None) -> dict[str, Any]:
        """The fields that name one incarnation of a pod of the job, as observations carry
        them (`uid`: this incarnation's uid instead of the generated one)."""
        name = self.pod_name(task, index)
        return {
            "pod": name,
            "pod_uid": self._pod_uid(name, uid),
            "task": task,
            "index": index,
            "job_version": version,
        }

    def _pod_uid(self, name: str, uid: str | None = None) -> str:
        if uid is not None:
            self._pod_uids[name] = uid
        elif name not in self._pod_uids:
            self._pod_uids[name] = f"{name}-uid{self._incarnations.get(name, 0)}"
        return self._pod_uids[name]


def phase_change(
    previous: str, phase: str, *, version: int = 0, retries: int = 0, reason: str = ""
) -> Decided:
    """A `PhaseChanged` for `JobScript.decide`."""
    return (
        PhaseChanged,
        {
            "previous": previous,
            "phase": phase,
            "reason": reason,
            "version": version,
            "retry_count": retries,
        },
    )
