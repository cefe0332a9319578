"""What the decider remembers about one job: a fold of its observations and decisions.

Frozen Structs: `evolve` returns new values and never mutates, so a state can be kept,
compared and replayed. Pods are keyed by name; a record without a uid is a pod the
decider asked for and has not seen yet; their counts are kept beside them, changed with
them. A state and its pods are encoded (snapshots, settled jobs' records) without the
fields that hold their defaults.
"""

from __future__ import annotations

import msgspec

from lavalog.events.decisions import TimerScheduled
from lavalog.events.extensions import ExitCodeSet, RestartBackoff, UncountedDisruptions
from lavalog.events.observations import CommandIssued, PodGroupObserved, PodObserved, PodsListed
from lavalog.events.volcano.api import FieldError, JobCondition, JobSpec, JobStatus


class PodRecord(msgspec.Struct, frozen=True, omit_defaults=True, gc=False):
    """One pod of the job, as last observed (or as requested, before it is observed)."""

    name: str
    task: str
    index: int
    version: int
    #: "" while requested and not yet observed: what tells an observed pod (read as such
    #: at most pod changes: a plain field costs a tenth of a property's call)
    uid: str = ""
    #: "" while requested and not yet observed
    phase: str = ""
    exit_code: int | None = None
    #: restarts of all its containers, init containers included (Volcano's TaskFailed)
    restart_count: int = 0
    #: every container reports ready; a dependsOn counts a Running pod only then
    containers_ready: bool = True
    #: deletion has been asked for, by anyone
    deleting: bool = False
    #: the decider asked for the deletion, so it is not an eviction
    killed: bool = False
    #: the job version the actuator creates this pod again at once it is gone (PodsReplace);
    #: None when no replacement was asked for
    replacement_version: int | None = None
    node: str = ""
    #: the reason of its `DisruptionTarget=True` condition, once it has one
    disruption: str = ""


class PodGroupRecord(msgspec.Struct, frozen=True, omit_defaults=True, gc=False):
    """The job's PodGroup: requested, then observed with the scheduler's phase."""

    name: str
    uid: str = ""
    phase: str = ""


class RefusedCreates(msgspec.Struct, frozen=True, gc=False):
    """Creates the API server refused in a row, of one job version (Volcano requeues the
    job each time, and terminates it after `maxRequeueNum`; `refused_creates`)."""

    version: int
    count: int = 0
    #: the decisions whose refusals were counted (one refusal may be published twice)
    decisions: tuple[str, ...] = ()
    #: the last refusal's Kubernetes message, for the Event of the last one
    message: str = ""


class PodCounts(msgspec.Struct, frozen=True, omit_defaults=True, gc=False):
    """The job's pods counted as Volcano's syncJob/killJob count them (`counts`)."""

    pending: int = 0
    running: int = 0
    succeeded: int = 0
    failed: int = 0
    terminating: int = 0
    unknown: int = 0
    #: task -> pod phase -> pods (terminating pods are in no task)
    by_task: dict[str, dict[str, int]] = {}
    #: pods, terminating or not, whose index is not below their task's replicas: what a
    #: sync kills when a task is scaled down (none: no pass over the pods to find them)
    stray: int = 0

    @property
    def alive(self) -> int:
        """Pods not yet finished: what Aborting/Completing/Terminating wait for."""
        return self.pending + self.running + self.terminating


class Replicas(msgspec.Struct, frozen=True, gc=False):
    """Replica counts of the admitted spec, computed once: every sync asks for them."""

    by_task: dict[str, int] = {}
    total: int = 0

    @classmethod
    def of(cls, spec: JobSpec) -> Replicas:
        by_task = {task.name: task.replicas for task in spec.tasks}
        return cls(by_task=by_task, total=sum(by_task.values()))


#: a fact that may arrive before the Job it is about
EarlyFact = PodObserved | PodGroupObserved | PodsListed | CommandIssued


class JobState(msgspec.Struct, frozen=True, omit_defaults=True, gc=False):
    """Everything the lifecycle of one job incarnation depends on."""

    key: str
    uid: str = ""
    generation: int = 0
    #: the admitted spec, defaults applied; None until a valid spec was seen
    spec: JobSpec | None = None
    replicas: Replicas = Replicas()
    #: the events the admitted spec's policies can match (`matchable.matchable_events`);
    #: None in a state written before it was kept (every policy is then tried)
    policy_events: frozenset[str] | None = None
    #: lavalog's exit-code sets for the admitted spec (an extension); usually empty
    exit_codes: dict[str, ExitCodeSet] = {}
    #: lavalog's restart backoff for the admitted spec (an extension); usually None
    restart_backoff: RestartBackoff | None = None
    #: lavalog's uncounted disruptions for the admitted spec (an extension); usually None
    uncounted_disruptions: UncountedDisruptions | None = None
    #: admission errors of the latest generation, if it was rejected
    rejected: tuple[FieldError, ...] = ()
    deleting: bool = False
    deleted: bool = False
    phase: str = ""
    reason: str = ""
    message: str = ""
    #: when the status last changed (`status.state.lastTransitionTime`)
    last_transition: float = 0.0
    version: int = 0
    retry_count: int = 0
    #: the Job's creationTimestamp, when known
    created: float | None = None
    #: `status.conditions`: one per phase, the latest last
    conditions: tuple[JobCondition, ...] = ()
    #: `status.runningDuration`: creation to the last phase change at a kill or an end
    running_duration: str | None = None
    pods: dict[str, PodRecord] = {}
    #: `pods` counted, kept up to date by each change to them rather than counted again
    #: (`counts.with_pods`); None: not counted yet (a state written before it was kept)
    counts: PodCounts | None = None
    podgroup: PodGroupRecord | None = None
    #: uid of the PodGroup the decider deleted; late news of it is ignored
    retired_podgroup_uid: str = ""
    #: task replicas the plugin resources were last ensured for; {} while there are none
    #: (not yet ensured, or deleted when the whole job was killed)
    resources_for: dict[str, int] = {}
    #: pending delayed actions and TTL deletions, as they were scheduled
    timers: dict[str, TimerScheduled] = {}
    #: creates refused since a pod the decider asked for last appeared (None: none)
    refused_creates: RefusedCreates | None = None
    #: the status last written, so that unchanged status is not written again
    status: JobStatus | None = None
    delete_requested: bool = False
    #: names of the Commands already acted on (a relisted Command must not act twice)
    handled_commands: tuple[str, ...] = ()
    #: taken over from another controller and no pod list seen yet: which of its pods
    #: exist is not known, so nothing is decided (see `takeover`)
    pods_unknown: bool = False
    #: actions of Commands that came while `pods_unknown`, to carry out after the list
    deferred_actions: tuple[str, ...] = ()
    #: while no Job is known under this name: facts about pods, PodGroups and Commands that
    #: came before their Job (taking over, the watchers list the kinds in parallel)
    early: dict[str, EarlyFact] = {}


#: how many handled Command names a job remembers
COMMAND_MEMORY = 64


def initial_state(key: str) -> JobState:
    """The state of a job the decider has never heard of."""
    return JobState(key=key)


def incarnation_state(state: JobState, uid: str) -> JobState:
    """The state that Job `uid`'s observations start from.

    A Job is its uid, not its name: what the decider knows about another Job of the same
    name, or about this one once it was deleted, says nothing about the Job now observed.
    So such a Job starts from nothing, exactly as it would after a restart from a
    snapshot that no longer holds the old state (the decision depends on the log alone).
    """
    if state.uid == uid and not state.deleted:
        return state
    return initial_state(state.key)


def forgettable(state: JobState) -> bool:
    """Nothing worth keeping: a deleted Job, or no Job and no early facts. `replay` and
    the decider service drop such states at once (the same log, the same memory)."""
    return state.deleted or not (state.uid or state.early)
