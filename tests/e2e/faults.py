"""Faults a scenario injects, each when its moment comes, in order.

A pod is named by what follows the job's name (`"fail-0"` is pod `<job>-fail-0`). Pod
faults wait until the job is Running and that pod of the job's current version runs, as
Volcano's e2e tests wait for Running before deleting a pod; a command waits for a phase.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial

from tests.e2e.conftest import NAMESPACE, System, job_phase, pod_phase, version_of

#: how long a fault may wait for its moment
WAIT = 60.0


@dataclass(frozen=True)
class Crash:
    """The pod's containers exit now with `exit_code` (`cluster.admin.crash`)."""

    pod: str
    exit_code: int = 1


@dataclass(frozen=True)
class Evict:
    """The pod is evicted: a graceful delete by someone other than the controller."""

    pod: str


@dataclass(frozen=True)
class Issue:
    """`lavalog job VERB` once the job is in phase `when`."""

    verb: str
    when: str


Fault = Crash | Evict | Issue


def running_pod(system: System, job: str, suffix: str) -> bool:
    """The job is Running and its pod `suffix` of the job's current version runs."""
    found, pod = system.log.job(job), system.log.pod(f"{job}-{suffix}")
    if found is None or pod is None or job_phase(found) != "Running":
        return False
    version = int((found.get("status") or {}).get("version", 0))
    return (
        pod_phase(pod) == "Running"
        and not pod["metadata"].get("deletionTimestamp")
        and version_of(pod) == version
    )


def _in_phase(system: System, job: str, phase: str) -> bool:
    return job_phase(system.log.job(job)) == phase


async def inject(system: System, job: str, faults: Sequence[Fault]) -> None:
    """Inject each fault in turn when its moment comes."""
    admin = system.cluster.admin
    for fault in faults:
        if isinstance(fault, Issue):
            phase = fault.when
            await system.log.until(
                partial(_in_phase, system, job, phase), WAIT, f"{job} in {phase} for {fault}"
            )
            await system.command(job, fault.verb)
            continue
        await system.log.until(
            partial(running_pod, system, job, fault.pod), WAIT, f"{job}-{fault.pod} runs"
        )
        pod = f"{job}-{fault.pod}"
        if isinstance(fault, Crash):
            admin.crash(NAMESPACE, pod, fault.exit_code)
        else:
            admin.evict(NAMESPACE, pod)
