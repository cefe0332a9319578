"""Partial views of the Kubernetes objects the watchers read, decoded straight from JSON.

Only the fields that become observations (or that the watch loop needs to resume) are
declared; msgspec skips the rest of each document without building it, which is what
keeps decoding watch streams cheap. Field names are Kubernetes' camelCase.
"""

from __future__ import annotations

from typing import Any, Generic, TypeVar

import msgspec

from lavalog.events.volcano.api import JobStatus


class _Partial(msgspec.Struct, rename="camel", frozen=True):
    """Base of every view: camelCase on the wire, unknown fields ignored."""


class OwnerReference(_Partial, frozen=True):
    api_version: str = ""
    kind: str = ""
    name: str = ""
    uid: str = ""
    controller: bool = False


class ObjectMeta(_Partial, frozen=True):
    name: str = ""
    namespace: str = ""
    uid: str = ""
    resource_version: str = ""
    generation: int = 0
    creation_timestamp: str | None = None
    deletion_timestamp: str | None = None
    labels: dict[str, str] = {}
    annotations: dict[str, str] = {}
    owner_references: tuple[OwnerReference, ...] = ()


class KubeObject(_Partial, frozen=True):
    """What every watched object has: the metadata the watch loop keys and resumes by."""

    metadata: ObjectMeta = ObjectMeta()


class Condition(_Partial, frozen=True):
    type: str = ""
    status: str = ""
    reason: str = ""
    message: str = ""
    last_transition_time: str | None = None


class Running(_Partial, frozen=True):
    started_at: str | None = None


class Terminated(_Partial, frozen=True):
    exit_code: int = 0
    reason: str = ""
    message: str = ""
    started_at: str | None = None
    finished_at: str | None = None


class ContainerState(_Partial, frozen=True):
    running: Running | None = None
    terminated: Terminated | None = None


class ContainerStatus(_Partial, frozen=True):
    name: str = ""
    ready: bool = False
    restart_count: int = 0
    state: ContainerState = ContainerState()
    last_state: ContainerState = ContainerState()


class PodSpec(_Partial, frozen=True):
    node_name: str = ""


class PodStatus(_Partial, frozen=True):
    phase: str = ""
    reason: str = ""
    message: str = ""
    start_time: str | None = None
    conditions: tuple[Condition, ...] = ()
    init_container_statuses: tuple[ContainerStatus, ...] = ()
    container_statuses: tuple[ContainerStatus, ...] = ()


class Pod(KubeObject, frozen=True):
    spec: PodSpec = PodSpec()
    status: PodStatus = PodStatus()


class Job(KubeObject, frozen=True):
    """A Volcano Job: the spec is kept whole, as admission judges all of it; the status
    is read for taking over jobs another controller ran."""

    spec: dict[str, Any] = {}
    status: JobStatus | None = None


class PodGroupStatus(_Partial, frozen=True):
    phase: str = ""
    conditions: tuple[Condition, ...] = ()


class PodGroup(KubeObject, frozen=True):
    status: PodGroupStatus = PodGroupStatus()


class Command(KubeObject, frozen=True):
    """A `bus.volcano.sh/v1alpha1` Command: an action aimed at one object. Go calls the
    target `TargetObject`; its JSON name, the one on the wire, is `target`."""

    action: str = ""
    target: OwnerReference | None = None
    reason: str = ""
    message: str = ""


class Status(_Partial, frozen=True):
    """The API's error document, as sent in a watch ERROR event."""

    code: int = 0
    reason: str = ""
    message: str = ""


class WatchEvent(_Partial, frozen=True):
    """One watch line; `object` stays raw until its type (ERROR, BOOKMARK...) is known."""

    type: str
    object: msgspec.Raw


class ListMeta(_Partial, frozen=True):
    resource_version: str = ""
    #: `continue` is a Python keyword
    continue_: str = msgspec.field(default="", name="continue")


T = TypeVar("T", bound=KubeObject)


class List(_Partial, Generic[T], frozen=True):
    """One page of a list of `T`s."""

    metadata: ListMeta = ListMeta()
    items: tuple[T, ...] = ()


class LeaseSpec(_Partial, frozen=True):
    holder_identity: str = ""
    lease_duration_seconds: int = 0
    acquire_time: str | None = None
    renew_time: str | None = None
    lease_transitions: int = 0


class Lease(KubeObject, frozen=True):
    """A `coordination.k8s.io/v1` Lease: who leads, and since when it last said so."""

    spec: LeaseSpec = LeaseSpec()
