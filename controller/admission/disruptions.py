"""Uncounted disruptions: a lavalog extension that keeps disruptions from using retries.

Volcano counts every restart against `maxRetry`, so a job preempted a few times fails for
good though none of its pods did anything wrong. Kubernetes Jobs can say otherwise
(`podFailurePolicy` with `onPodConditions: [{type: DisruptionTarget}]`, action
`Ignore`): a pod that Kubernetes itself ended, marking it `DisruptionTarget=True` first,
is replaced without counting against `backoffLimit`. lavalog reads the same choice
from one Job annotation, leaving the spec plain Volcano YAML:

    lavalog.io/uncounted-disruptions: "*"        # any DisruptionTarget reason
    lavalog.io/uncounted-disruptions: "PreemptionByScheduler,EvictionByEvictionAPI"

A restart a policy (or its timer) chooses on the PodFailed or PodEvicted of such a pod
then restarts as the policy says and does not count a retry. docs/semantics.md,
"Extensions", has the rules.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum

from lavalog.controller.admission.annotations import annotation, read_annotation
from lavalog.events.extensions import UncountedDisruptions
from lavalog.events.volcano.api import FieldError

ANNOTATION = annotation("uncounted-disruptions")
#: every reason, as `onPodConditions` matches the condition whatever its reason
ANY = "*"


class DisruptionReason(StrEnum):
    """Why Kubernetes ends a pod that did nothing wrong: the reasons of the pod condition
    `DisruptionTarget=True` (k8s.io/api/core/v1 `PodReason*` and the controllers that
    write them)."""

    PREEMPTION_BY_SCHEDULER = "PreemptionByScheduler"
    EVICTION_BY_EVICTION_API = "EvictionByEvictionAPI"
    DELETION_BY_TAINT_MANAGER = "DeletionByTaintManager"
    TERMINATION_BY_KUBELET = "TerminationByKubelet"
    DELETION_BY_POD_GC = "DeletionByPodGC"


_REASONS = frozenset(DisruptionReason)
_KNOWN = ", ".join(DisruptionReason)


def parse_disruptions(text: str) -> UncountedDisruptions | str:
    """The reasons `text` names, or what is wrong with it (a sentence for an error message)."""
    if text.strip() == ANY:
        return UncountedDisruptions()
    items = [item.strip() for item in text.split(",")]
    if not all(items):
        return f"{text!r} must be {ANY!r} or a comma-separated list of reasons among {_KNOWN}"
    unknown = [item for item in items if item not in _REASONS]
    if unknown:
        return f"{unknown[0]!r} is not a DisruptionTarget reason: use {ANY!r} or any of {_KNOWN}"
    if len(set(items)) != len(items):
        return f"{text!r} names a reason twice"
    return UncountedDisruptions(tuple(sorted(items)))


def uncounted_disruptions(
    annotations: Mapping[str, str],
) -> tuple[UncountedDisruptions | None, list[FieldError]]:
    """The disruptions the annotations exempt (None without the annotation), and its problem."""
    return read_annotation(annotations, ANNOTATION, parse_disruptions)
