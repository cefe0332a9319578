"""Scripted observation streams: what a cluster would report about one job, step by step.

Tests, the shipped examples and the benchmarks write lifecycles with this instead of
raw JSON: `JobScript(...).submit().podgroup("Inqueue").pod("worker", 0, "Running")...`.
Ids, uids and times are deterministic, so a script always yields the same log.
"""

from __future__ import annotations

from typing import Any, Self

import msgspec

from events.observations import (
    AnyObservation,
    CommandIssued,
    JobDeleted,
    JobObserved,
    PodDeleted,
    PodGroupObserved,
    PodObserved,
    PodsListed,
    TimerFired,
)

#: 2026-01-01T00:00:00Z: scripts start here unless told otherwise
EPOCH = 1_767_225_600.0


class JobScript:
    """The observations of one job, in order, with a clock that moves only when told."""

    def __init__(
        self,
        name: str,
        spec: dict[str, Any],
        *,
        namespace: str = "default",
        uid: str | None = None,
        start: float = EPOCH,
    ) -> None:
        self.name = name
        self.key = f"{namespace}/{name}"
        self.uid = uid or f"uid-{namespace}-{name}"
        self.spec = spec
        self.time = start
        self.events: list[AnyObservation] = []
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
        return self._add(
            JobObserved, generation=self._generation, spec=self.spec, extensions=extensions
        )

    def delete(self) -> Self:
        return self._add(JobDeleted)

    def podgroup(self, phase: str, *, reason: str = "", deleted: bool = False) -> Self:
        return self._add(
            PodGroupObserved,
            podgroup=f"{self.name}-{self.uid}",
            podgroup_uid=f"pg-{self.uid}",
            phase=phase,
            reason=reason,
            deleted=deleted,
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
        deleting: bool = False,
        node: str = "node-0",
    ) -> Self:
        """A pod of the job is seen in `phase` (a new incarnation after `pod_deleted`)."""
        name = self.pod_name(task, index)
        return self._add(
            PodObserved,
            pod=name,
            pod_uid=self._pod_uid(name),
            task=task,
            index=index,
            job_version=version,
            phase=phase,
            exit_code=exit_code,
            reason=reason,
            restart_count=restarts,
            deleting=deleting,
            node=node,
        )

    def pods(self, task: str, count: int, phase: str, *, version: int = 0) -> Self:
        """Replicas 0..count-1 of `task` all seen in `phase`."""
        for index in range(count):
            self.pod(task, index, phase, version=version)
        return self

    def pod_deleted(
        self, task: str, index: int, *, phase: str = "Running", version: int = 0
    ) -> Self:
        """The pod is gone; the next `pod` of that name is a new incarnation."""
        name = self.pod_name(task, index)
        self._add(
            PodDeleted,
            pod=name,
            pod_uid=self._pod_uid(name),
            task=task,
            index=index,
            job_version=version,
            phase=phase,
        )
        return self.new_incarnation(task, index)

    def new_incarnation(self, task: str, index: int) -> Self:
        """The next `pod` of that name is a new incarnation; alone, without `pod_deleted`:
        its predecessor's deletion was never observed (a relist shows only the new pod)."""
        name = self.pod_name(task, index)
        self._incarnations[name] = self._incarnations.get(name, 0) + 1
        self._pod_uids.pop(name, None)
        return self

    def listed(self, *alive: tuple[str, int]) -> Self:
        """A fresh list shows exactly these pods (task, index) of the job."""
        pods = {
            self.pod_name(task, index): self._pod_uid(self.pod_name(task, index))
            for task, index in alive
        }
        return self._add(PodsListed, pods=pods)

    def command(self, action: str, *, name: str = "") -> Self:
        return self._add(
            CommandIssued, command=name or f"{self.name}-{action.lower()}", action=action
        )

    def timer(self, timer_id: str) -> Self:
        return self._add(TimerFired, timer_id=timer_id)

    def pod_name(self, task: str, index: int) -> str:
        return f"{self.name}-{task}-{index}"

    def _pod_uid(self, name: str) -> str:
        if name not in self._pod_uids:
            self._pod_uids[name] = f"{name}-uid{self._incarnations.get(name, 0)}"
        return self._pod_uids[name]

    def _add(self, kind: type[AnyObservation], **fields: Any) -> Self:
        self.events.append(
            kind(
                id=f"{self.key}@{len(self.events)}",
                key=self.key,
                job_uid=self.uid,
                time=self.time,
                **fields,
            )
        )
        self.time += 1.0
        return self
