"""Decisions: what the decider concluded, written to `lavalog.decisions`.

They say exactly what to create, kill and write, so the actuator needs no lifecycle
logic, and they say why (trigger, matched policy), so an audit can replay them. The
envelope adds `cause`, the id of the observation that led to the decision; a decision's
own `id` is derived from it (`<cause>#<n>`; a JobAdmitted's is `<cause>#admitted`), so a
re-run produces the same ids. Each kind is final: the decider dispatches on the exact
type.
"""

from __future__ import annotations

import msgspec

from lavalog.events.durations import format_duration
from lavalog.events.extensions import ExitCodeSet, RestartBackoff, UncountedDisruptions
from lavalog.events.observations import SCHEMA_VERSION
from lavalog.events.volcano.api import FieldError, JobSpec, JobStatus


# gc=False (inherited by every kind): decisions are made at nearly every step and hold no
# reference cycle, so the cyclic GC need not track them
class Decision(msgspec.Struct, frozen=True, kw_only=True, tag_field="type", gc=False):
    """Envelope fields shared by every decision."""

    v: int = SCHEMA_VERSION
    id: str
    key: str
    job_uid: str
    time: float
    cause: str


class PolicyRef(msgspec.Struct, frozen=True, kw_only=True):
    """Which policy matched: job level or a task's, and its position in that list."""

    level: str  # "task" or "job"
    index: int
    task: str = ""


# not tracked by the cyclic GC, as decisions are not
class PodRef(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """A pod by name; `uid` (when known) makes a delete hit only that incarnation."""

    name: str
    task: str
    index: int
    uid: str = ""


class PodFailure(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """How the pod behind a PodFailed or PodEvicted went, beside its exit code: enough to
    say in one line what happened to it. Empty parts are left out of the log."""

    #: the container whose exit code the event carries (podFailurePolicy's choice)
    container: str = ""
    #: Kubernetes' reason: the pod's (Evicted...), else that container's (OOMKilled...)
    reason: str = ""
    node: str = ""
    #: the reason of the pod's `DisruptionTarget=True` condition: Kubernetes ended a pod
    #: that did nothing wrong (PreemptionByScheduler, EvictionByEvictionAPI, ...)
    disruption: str = ""


class ActionDecided(Decision, frozen=True, kw_only=True, tag="ActionDecided"):
    """The action taken on an event, the event that triggered it and the policy that chose it."""

    action: str
    trigger: str
    phase: str
    task: str = ""
    pod: str = ""
    exit_code: int | None = None
    policy: PolicyRef | None = None
    #: set when a delayed action (policy timeout) is carried out now
    timer_id: str = ""
    #: how the pod failed or was evicted (PodFailed, PodEvicted); unset otherwise and in
    #: logs written before it was recorded
    failure: PodFailure | msgspec.UnsetType = msgspec.UNSET
    #: True when the restart counts no retry: its pod was disrupted and the Job's
    #: `lavalog.io/uncounted-disruptions` (an extension) covers the disruption; unset
    #: otherwise
    uncounted: bool | msgspec.UnsetType = msgspec.UNSET


class PhaseChanged(Decision, frozen=True, kw_only=True, tag="PhaseChanged"):
    """The job entered a new phase."""

    previous: str
    phase: str
    reason: str = ""
    message: str = ""
    retry_count: int = 0
    version: int = 0


class PodGroupCreate(Decision, frozen=True, kw_only=True, tag="PodGroupCreate"):
    """Create the job's PodGroup so that the gang scheduler can admit it as a whole.

    `job_generation`: the Job's `metadata.generation` the decision was made from (0 when
    unknown), as in PodsCreate."""

    podgroup: str
    min_member: int
    queue: str
    priority_class_name: str = ""
    min_task_member: dict[str, int] = {}
    job_generation: int = 0


class PodGroupDelete(Decision, frozen=True, kw_only=True, tag="PodGroupDelete"):
    """Delete the job's PodGroup: the job finished and must stop holding its queue share.
    `podgroup_uid`: the PodGroup's uid once the decider has seen it ("" before), so that
    the delete, carried out again after a later run made the PodGroup anew under the same
    name (a resumed job), leaves that one alone."""

    podgroup: str
    podgroup_uid: str = ""


class PluginResourcesEnsure(Decision, frozen=True, kw_only=True, tag="PluginResourcesEnsure"):
    """Create or update what the job's plugins need (services, hosts ConfigMap, ssh Secret).
    `job_generation` as in PodsCreate."""

    plugins: dict[str, list[str]]
    task_replicas: dict[str, int]
    job_generation: int = 0


class PluginResourcesDelete(Decision, frozen=True, kw_only=True, tag="PluginResourcesDelete"):
    """Delete what the job's plugins created: the whole job was killed (Volcano's killJob
    calls each plugin's OnJobDelete), so its next run gets them afresh (new ssh keys)."""

    plugins: dict[str, list[str]]
    reason: str


class PodsCreate(Decision, frozen=True, kw_only=True, tag="PodsCreate"):
    """Create these pods from their task templates, labelled with `job_version`.

    `job_generation` is the Job's `metadata.generation` the decision was made from (0 when
    unknown): a Job the actuator already holds at that generation need not be read again.
    """

    job_version: int
    podgroup: str
    pods: tuple[PodRef, ...]
    job_generation: int = 0


class PodsKill(Decision, frozen=True, kw_only=True, tag="PodsKill"):
    """Delete these pods (precondition on uid when given)."""

    reason: str
    pods: tuple[PodRef, ...]


class PodsReplace(Decision, frozen=True, kw_only=True, tag="PodsReplace"):
    """Delete these finished pods (precondition on uid) and create each again from its
    task template, labelled with `job_version`, once it is gone.

    A restart of a pod that has finished, in one trip: Volcano deletes the pod and
    creates it at the sync its deletion causes; the decider makes this decision only
    where that sync would create it (see `decider.replacement`), so the same pod comes
    back without the deletion going through the log first. `job_generation` as in
    PodsCreate.
    """

    reason: str
    pods: tuple[PodRef, ...]
    job_version: int
    podgroup: str
    job_generation: int = 0


class StatusWrite(Decision, frozen=True, kw_only=True, tag="StatusWrite"):
    """Write the Job's `status` (the whole of it)."""

    status: JobStatus


class RestartBackoffDelay(msgspec.Struct, frozen=True, kw_only=True):
    """Why a restart waits longer: lavalog's restart backoff (an extension) added `delay`
    seconds to it, the job's `restart`-th restart (1 for the first)."""

    delay: float
    restart: int

    def __str__(self) -> str:
        return f"delayed {format_duration(self.delay)} by restart backoff (restart {self.restart})"


class TimerScheduled(Decision, frozen=True, kw_only=True, tag="TimerScheduled"):
    """A durable timer: at `fire_at` the decider service observes TimerFired(timer_id)."""

    timer_id: str
    fire_at: float
    action: str
    trigger: str
    task: str = ""
    pod: str = ""
    exit_code: int | None = None
    policy: PolicyRef | None = None
    #: set when the restart backoff extension delayed the action (part of `fire_at`);
    #: unset, and so absent from the log, otherwise
    backoff: RestartBackoffDelay | msgspec.UnsetType = msgspec.UNSET
    #: as in `ActionDecided`: the action carried out when the timer fires says it too
    failure: PodFailure | msgspec.UnsetType = msgspec.UNSET


class TimerCancelled(Decision, frozen=True, kw_only=True, tag="TimerCancelled"):
    """A pending timer will not act: its cause went away or the job moved on."""

    timer_id: str
    reason: str


class JobAdmitted(Decision, frozen=True, kw_only=True, tag="JobAdmitted"):
    """A new generation of the Job passed admission: the job runs `spec` from now on, with
    Volcano's defaults applied, and the extensions its `lavalog.io/` annotations give
    (absent when it has none). Logs written before admissions were recorded lack it."""

    generation: int
    spec: JobSpec
    exit_codes: dict[str, ExitCodeSet] | msgspec.UnsetType = msgspec.UNSET
    restart_backoff: RestartBackoff | msgspec.UnsetType = msgspec.UNSET
    uncounted_disruptions: UncountedDisruptions | msgspec.UnsetType = msgspec.UNSET


class JobRejected(Decision, frozen=True, kw_only=True, tag="JobRejected"):
    """The Job spec (or an update of it) breaks an admission rule; nothing else happens to it."""

    generation: int
    errors: tuple[FieldError, ...]


class PodGroupPending(Decision, frozen=True, kw_only=True, tag="PodGroupPending"):
    """The gang scheduler cannot place the job's PodGroup: say why on the Job, as
    Volcano's `PodGroupPending` Event does. `condition`, `reason`, `message`: the
    scheduler's newest True condition (not `Scheduled`)."""

    podgroup: str
    reason: str = ""
    message: str = ""
    condition: str = "Unschedulable"


class JobDelete(Decision, frozen=True, kw_only=True, tag="JobDelete"):
    """Delete the Job (ttlSecondsAfterFinished elapsed)."""

    reason: str


AnyDecision = (
    ActionDecided
    | PhaseChanged
    | PodGroupCreate
    | PodGroupDelete
    | PluginResourcesEnsure
    | PluginResourcesDelete
    | PodsCreate
    | PodsKill
    | PodsReplace
    | StatusWrite
    | TimerScheduled
    | TimerCancelled
    | JobAdmitted
    | JobRejected
    | PodGroupPending
    | JobDelete
)
