"""The steps of a scenario: what happens to a job's pods, and the commands it is given,
each when its moment comes, in order.

A pod is named by what follows the job's name (`"fail-0"` is pod `<job>-fail-0`). A
scenario's pods run until a step ends them (`Crash`, `Evict`, `Finish`) or the controller
does, not on a timer of their own: the simulated cluster runs 50 times faster than the
wall clock while the controller takes wall-clock time to react, so on a busy machine a pod
that ends after `sleep 20` can end before the controller has seen the job Running, and
the job takes another path. A pod step waits until the job is Running, as the controller
wrote it, and the named pods of the job's current version run (as Volcano's e2e tests wait
for Running before deleting a pod); then it acts, and waits until the act has landed (the
pods no longer run), so that the next step cannot take the same pods for its own. A
command waits for a phase.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from lavalog.simulator.admin import Admin
from tests.e2e.conftest import NAMESPACE, System, job_phase, pod_phase, version_of

#: how long a step may wait for its moment
WAIT = 60.0


@dataclass(frozen=True)
class Crash:
    """The pod's containers exit now with `exit_code` (`cluster.admin.crash`)."""

    pod: str
    exit_code: int = 1

    def targets(self, manifest: dict[str, Any]) -> tuple[str, ...]:
        return (self.pod,)

    def act(self, admin: Admin, pod: str) -> None:
        admin.crash(NAMESPACE, pod, self.exit_code)


@dataclass(frozen=True)
class Evict:
    """The pod is evicted: a graceful delete by someone other than the controller."""

    pod: str

    def targets(self, manifest: dict[str, Any]) -> tuple[str, ...]:
        return (self.pod,)

    def act(self, admin: Admin, pod: str) -> None:
        admin.evict(NAMESPACE, pod)


@dataclass(frozen=True)
class Finish:
    """The pods' programs end now, successfully (exit code 0): every pod of the job when
    none is named."""

    pods: tuple[str, ...] = ()

    def targets(self, manifest: dict[str, Any]) -> tuple[str, ...]:
        return self.pods or pod_names(manifest)

    def act(self, admin: Admin, pod: str) -> None:
        admin.crash(NAMESPACE, pod, 0)


@dataclass(frozen=True)
class Issue:
    """`lavalog job VERB` once the job is in phase `when`."""

    verb: str
    when: str


Fault = Crash | Evict | Finish | Issue


def pod_names(manifest: dict[str, Any]) -> tuple[str, ...]:
    """Every pod of the job, by what follows the job's name (`task-index`)."""
    return tuple(
        f"{task['name']}-{index}"
        for task in manifest["spec"]["tasks"]
        for index in range(int(task["replicas"]))
    )


def running_pods(system: System, job: str, suffixes: Sequence[str]) -> bool:
    """The job is Running and its pods `suffixes` of the job's current version run."""
    found = system.log.job(job)
    if found is None or job_phase(found) != "Running":
        return False
    version = int((found.get("status") or {}).get("version", 0))
    for suffix in suffixes:
        pod = system.log.pod(f"{job}-{suffix}")
        if (
            pod is None
            or pod_phase(pod) != "Running"
            or pod["metadata"].get("deletionTimestamp")
            or version_of(pod) != version
        ):
            return False
    return True


def landed(system: System, job: str, uids: dict[str, str]) -> bool:
    """None of the pods (suffix -> uid) acted on runs any more."""
    for suffix, uid in uids.items():
        pod = system.log.pod(f"{job}-{suffix}")
        if (
            pod is not None
            and pod["metadata"]["uid"] == uid
            and pod_phase(pod) == "Running"
            and not pod["metadata"].get("deletionTimestamp")
        ):
            return False
    return True


def _in_phase(system: System, job: str, phase: str) -> bool:
    return job_phase(system.log.job(job)) == phase


async def inject(system: System, manifest: dict[str, Any], faults: Sequence[Fault]) -> None:
    """Take each step in turn when its moment comes."""
    job = manifest["metadata"]["name"]
    for fault in faults:
        if isinstance(fault, Issue):
            phase = fault.when
            await system.log.until(
                partial(_in_phase, system, job, phase), WAIT, f"{job} in {phase} for {fault}"
            )
            await system.command(job, fault.verb)
            continue
        suffixes = fault.targets(manifest)
        await system.log.until(
            partial(running_pods, system, job, suffixes), WAIT, f"{job}: {suffixes} run for {fault}"
        )
        uids = {s: (system.log.pod(f"{job}-{s}") or {})["metadata"]["uid"] for s in suffixes}
        for suffix in suffixes:
            fault.act(system.cluster.admin, f"{job}-{suffix}")
        await system.log.until(partial(landed, system, job, uids), WAIT, f"{job}: {fault} landed")
