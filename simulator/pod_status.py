"""What a kubelet reports about a pod: its phase and its own conditions, merged with the
conditions other components own.

Pure functions over the pod's spec and status dicts, mirroring the kubelet:
`phase` is `getPhase` (pkg/kubelet/kubelet_pods.go), `kubelet_conditions` the
`Generate*Condition` functions (pkg/kubelet/status/generate.go) in the order
`generateAPIPodStatus` appends them, `merge_conditions` the condition half of
`mergePodStatus` and `with_transition_times` `updateLastTransitionTime`
(pkg/kubelet/status/status_manager.go): a condition's `lastTransitionTime` moves only
when its status changes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from enum import StrEnum
from typing import Any

Obj = dict[str, Any]

#: the conditions a kubelet owns and rewrites on every status update
#: (pkg/kubelet/types/pod_status.go `PodConditionsByKubelet`)
KUBELET_OWNED = frozenset(
    {"PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled"}
)
#: written by the API server, the taint manager, schedulers and the kubelet alike
DISRUPTION_TARGET = "DisruptionTarget"


class Reason(StrEnum):
    """The kubelet's reasons for its conditions (pkg/kubelet/status/generate.go)."""

    CONTAINERS_NOT_READY = "ContainersNotReady"
    CONTAINERS_NOT_INITIALIZED = "ContainersNotInitialized"
    READINESS_GATES_NOT_READY = "ReadinessGatesNotReady"
    POD_COMPLETED = "PodCompleted"
    POD_FAILED = "PodFailed"


def state_of(container_status: Mapping[str, Any] | None) -> str:
    """`running`, `waiting`, `terminated`, or "" for no status."""
    if not container_status:
        return ""
    return str(next(iter(container_status.get("state") or {"": None})))


def _by_name(statuses: Iterable[Obj] | None) -> dict[str, Obj]:
    return {s["name"]: s for s in statuses or ()}


def _exit_code(container_status: Mapping[str, Any]) -> int:
    return int(container_status["state"]["terminated"]["exitCode"])


def _last_exit_code(container_status: Mapping[str, Any]) -> int | None:
    last = (container_status.get("lastState") or {}).get("terminated")
    return None if last is None else int(last["exitCode"])


def phase(spec: Mapping[str, Any], status: Mapping[str, Any], *, terminal: bool = False) -> str:
    """The pod phase the container states make (`getPhase`); `terminal`: the kubelet has
    finished with the pod (it was deleted), so nothing will be restarted."""
    policy = spec.get("restartPolicy", "Always")
    inits = _by_name(status.get("initContainerStatuses"))
    pending_init = failed_init = 0
    for container in spec.get("initContainers") or ():
        found = inits.get(container["name"])
        state = state_of(found)
        if found is None or state not in ("terminated", "waiting"):
            pending_init += 1
        elif state == "terminated":
            failed_init += _exit_code(found) != 0
        elif (last := _last_exit_code(found)) is not None:
            failed_init += last != 0
        else:
            pending_init += 1
    running = waiting = stopped = succeeded = unknown = 0
    statuses = _by_name(status.get("containerStatuses"))
    for container in spec.get("containers") or ():
        found = statuses.get(container["name"])
        state = state_of(found)
        if found is None or not state:
            unknown += 1
        elif state == "running":
            running += 1
        elif state == "terminated":
            stopped += 1
            succeeded += _exit_code(found) == 0
        elif _last_exit_code(found) is not None:
            stopped += 1
        else:
            waiting += 1
    if failed_init and policy == "Never":
        return "Failed"
    if pending_init or waiting:
        return "Pending"
    if running and not unknown:
        return "Running"
    if not running and stopped and not unknown:
        if terminal:
            return "Succeeded" if stopped == succeeded else "Failed"
        if policy == "Always":
            return "Running"
        if stopped == succeeded:
            return "Succeeded"
        return "Failed" if policy == "Never" else "Running"
    return "Pending"


def _condition(kind: str, status: bool, reason: str = "", message: str = "") -> Obj:
    found: Obj = {"type": kind, "status": "True" if status else "False"}
    if reason:
        found["reason"] = reason
    if message:
        found["message"] = message
    return found


def _go_list(names: Sequence[str]) -> str:
    """A Go `[]string` printed with `%s`: `[a b]`."""
    return "[" + " ".join(names) + "]"


def _not_ready(containers: Iterable[Obj], statuses: dict[str, Obj]) -> tuple[list[str], list[str]]:
    """The containers without a status, and those whose status is not ready."""
    unknown, unready = [], []
    for container in containers:
        found = statuses.get(container["name"])
        if found is None:
            unknown.append(container["name"])
        elif not found.get("ready"):
            unready.append(container["name"])
    return unknown, unready


def _waiting_for(
    kind: str, reason: Reason, unknown: list[str], which: str, names: list[str]
) -> Obj:
    """True, or False naming the containers it waits for, as generate.go words it."""
    messages = []
    if unknown:
        messages.append(f"containers with unknown status: {_go_list(unknown)}")
    if names:
        messages.append(f"containers with {which} status: {_go_list(names)}")
    if messages:
        return _condition(kind, False, reason, ", ".join(messages))
    return _condition(kind, True)


def _containers_ready(spec: Mapping[str, Any], statuses: dict[str, Obj], pod_phase: str) -> Obj:
    """`GenerateContainersReadyCondition`."""
    unknown, unready = _not_ready(spec.get("containers") or (), statuses)
    if pod_phase == "Succeeded" and not unknown:
        return _condition("ContainersReady", False, Reason.POD_COMPLETED)
    if pod_phase == "Failed":
        return _condition("ContainersReady", False, Reason.POD_FAILED)
    return _waiting_for("ContainersReady", Reason.CONTAINERS_NOT_READY, unknown, "unready", unready)


def _ready(spec: Mapping[str, Any], containers_ready: Obj, others: Sequence[Obj]) -> Obj:
    """`GeneratePodReadyCondition`: ContainersReady, then the pod's readiness gates."""
    if containers_ready["status"] != "True":
        return {**containers_ready, "type": "Ready"}
    present = {c.get("type"): c for c in others}
    messages = []
    for gate in spec.get("readinessGates") or ():
        kind = gate.get("conditionType", "")
        found = present.get(kind)
        if found is None:
            messages.append(
                f'corresponding condition of pod readiness gate "{kind}" does not exist.'
            )
        elif found.get("status") != "True":
            messages.append(
                f'the status of pod readiness gate "{kind}" is not "True", '
                f"but {found.get('status')}"
            )
    if messages:
        return _condition("Ready", False, Reason.READINESS_GATES_NOT_READY, ", ".join(messages))
    return _condition("Ready", True)


def _initialized(
    spec: Mapping[str, Any], inits: dict[str, Obj], statuses: dict[str, Obj], pod_phase: str
) -> Obj:
    """`GeneratePodInitializedCondition` (regular init containers: initialized once they
    exited 0, which is when the kubelet reports them ready)."""
    unknown, incomplete = _not_ready(spec.get("initContainers") or (), inits)
    if pod_phase == "Succeeded" and not unknown:
        return _condition("Initialized", True, Reason.POD_COMPLETED)
    regular = (statuses.get(c["name"]) for c in spec.get("containers") or ())
    if any(state_of(found) in ("running", "terminated") for found in regular):
        return _condition("Initialized", True)  # HasAnyRegularContainerStarted
    return _waiting_for(
        "Initialized", Reason.CONTAINERS_NOT_INITIALIZED, unknown, "incomplete", incomplete
    )


def kubelet_conditions(
    spec: Mapping[str, Any], status: Mapping[str, Any], others: Sequence[Obj], *, sandbox: bool
) -> list[Obj]:
    """The kubelet's own conditions, in the order it appends them, without times.
    `others`: the pod's conditions other components own (readiness gates read them);
    `sandbox`: whether the pod's sandbox exists (PodReadyToStartContainers)."""
    pod_phase = status.get("phase", "Pending")
    statuses = _by_name(status.get("containerStatuses"))
    containers_ready = _containers_ready(spec, statuses, pod_phase)
    return [
        _condition("PodReadyToStartContainers", sandbox),
        _initialized(spec, _by_name(status.get("initContainerStatuses")), statuses, pod_phase),
        _ready(spec, containers_ready, others),
        containers_ready,
        _condition("PodScheduled", True),
    ]


def others_of(conditions: Iterable[Obj] | None) -> list[Obj]:
    """The conditions of a stored pod that the kubelet does not own."""
    return [c for c in conditions or () if c.get("type") not in KUBELET_OWNED]


def merge_conditions(stored: Iterable[Obj] | None, kubelet: Iterable[Obj]) -> list[Obj]:
    """`mergePodStatus`: the stored conditions the kubelet does not own keep their place
    in front, then the kubelet's; a DisruptionTarget of the kubelet's (a pod it evicts)
    replaces the stored one."""
    merged = others_of(stored)
    for condition in kubelet:
        at = next((i for i, c in enumerate(merged) if c.get("type") == DISRUPTION_TARGET), None)
        if condition.get("type") == DISRUPTION_TARGET and at is not None:
            merged[at] = condition
        else:
            merged.append(condition)
    return merged


def with_transition_times(new: Iterable[Obj], old: Iterable[Obj] | None, now: str) -> list[Obj]:
    """`updateLastTransitionTime`: each condition keeps its time while its status holds."""
    previous = {c.get("type"): c for c in old or ()}
    out = []
    for condition in new:
        before = previous.get(condition.get("type"))
        same = before is not None and before.get("status") == condition.get("status")
        when = before.get("lastTransitionTime", now) if same and before else now
        out.append({**condition, "lastTransitionTime": when})
    return out
