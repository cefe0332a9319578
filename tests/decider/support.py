"""Given/when/then helpers for decider tests: build a state, send it one observation of
the same job (written with `tests.scenarios.JobScript`), read the decisions."""

from __future__ import annotations

from typing import Any

from lavalog.controller.admission import Admitted, admit_job
from lavalog.controller.decider.core import JobState, PodGroupRecord, PodRecord, step
from lavalog.controller.decider.core.state import Replicas
from lavalog.events.decisions import (
    AnyDecision,
    PhaseChanged,
    PodsCreate,
    PodsKill,
    PodsReplace,
    StatusWrite,
)
from lavalog.events.observations import AnyObservation
from lavalog.events.volcano.api import JobSpec
from tests.scenarios import EPOCH, JobScript

KEY = "default/job"
UID = "uid-1"
T0 = EPOCH
PODGROUP_UID = "pg-uid"


def worker_spec(**overrides: Any) -> dict[str, Any]:
    """One task `worker` of three replicas, minAvailable 3, maxRetry 3, unless overridden."""
    task = {
        "name": "worker",
        "replicas": 3,
        "template": {"spec": {"containers": [{"name": "main", "image": "busybox"}]}},
    }
    task.update(overrides.pop("task", {}))
    spec: dict[str, Any] = {"minAvailable": 3, "maxRetry": 3, "tasks": [task]}
    spec.update(overrides)
    return spec


def admitted(raw: dict[str, Any]) -> JobSpec:
    result = admit_job(raw)
    assert isinstance(result, Admitted), result
    return result.spec


def pod(
    task: str,
    index: int,
    phase: str,
    *,
    version: int = 0,
    deleting: bool = False,
    restarts: int = 0,
) -> PodRecord:
    name = f"job-{task}-{index}"
    return PodRecord(
        name=name,
        task=task,
        index=index,
        version=version,
        uid=f"{name}-uid",
        phase=phase,
        restart_count=restarts,
        deleting=deleting,
        killed=deleting,
    )


def given(
    phase: str,
    pods: list[PodRecord] | tuple[PodRecord, ...] = (),
    *,
    spec: dict[str, Any] | None = None,
    retry_count: int = 0,
    version: int = 0,
    podgroup_phase: str = "Running",
    annotations: dict[str, str] | None = None,
) -> JobState:
    """A job in `phase` with these pods, its PodGroup admitted by the scheduler, and
    lavalog's extension `annotations` if given."""
    result = admit_job(spec or worker_spec(), annotations)
    assert isinstance(result, Admitted), result
    admitted_spec = result.spec
    return JobState(
        key=KEY,
        uid=UID,
        generation=1,
        spec=admitted_spec,
        exit_codes=result.exit_codes,
        restart_backoff=result.restart_backoff,
        uncounted_disruptions=result.uncounted_disruptions,
        replicas=Replicas.of(admitted_spec),
        phase=phase,
        version=version,
        retry_count=retry_count,
        pods={record.name: record for record in pods},
        podgroup=PodGroupRecord(name=f"job-{UID}", uid=PODGROUP_UID, phase=podgroup_phase),
    )


def observed() -> JobScript:
    """The observations of the job `given` describes, from T0."""
    return JobScript("job", worker_spec(), uid=UID, start=T0)


def command(action: str) -> AnyObservation:
    return observed().command(action, name="cmd").last


def nudge(*, phase: str = "Running") -> AnyObservation:
    """An observation that changes nothing: the job just syncs."""
    return observed().podgroup(phase, uid=PODGROUP_UID).last


def when(state: JobState, observation: AnyObservation) -> tuple[JobState, list[AnyDecision]]:
    return step(state, observation)


def phases(decisions: list[AnyDecision]) -> list[str]:
    return [d.phase for d in decisions if isinstance(d, PhaseChanged)]


def killed(decisions: list[AnyDecision]) -> list[str]:
    return [ref.name for d in decisions if isinstance(d, PodsKill) for ref in d.pods]


def replaced(decisions: list[AnyDecision]) -> list[str]:
    return [ref.name for d in decisions if isinstance(d, PodsReplace) for ref in d.pods]


def created(decisions: list[AnyDecision]) -> list[str]:
    return [ref.name for d in decisions if isinstance(d, PodsCreate) for ref in d.pods]


def last_status(decisions: list[AnyDecision]) -> StatusWrite | None:
    writes = [d for d in decisions if isinstance(d, StatusWrite)]
    return writes[-1] if writes else None
