"""A Job's spec as lavalog observed it, one version per generation, as YAML.

The watchers publish a JobObserved with the Job's `spec` at every new generation, so the
log holds each spec the job ran with, after the Job itself is gone. Its metadata is not
all there: the name, namespace, uid, generation, creation time and lavalog's own
annotations (`lavalog.io/`) are; labels and other annotations are not.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import msgspec
import yaml

from lavalog.events.observations import JobObserved
from lavalog.events.topics import split_job_key
from lavalog.events.volcano.api import API_VERSION, KIND
from lavalog.projections.core.wire import Time, time_text


class SpecVersion(msgspec.Struct, frozen=True, kw_only=True):
    """The Job at one generation, first observed at `observed`."""

    generation: int
    observed: Time
    #: the Job as a manifest: apiVersion, kind, the metadata the log has, and spec
    yaml: str


def manifest(observed: JobObserved) -> dict[str, Any]:
    """The Job of one observation: what `kubectl get vcjob -o yaml` shows of it, less
    what the log does not hold (status, labels, other annotations)."""
    namespace, name = split_job_key(observed.key)
    metadata: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "uid": observed.job_uid,
        "generation": observed.generation,
    }
    if observed.created is not None:
        metadata["creationTimestamp"] = time_text(observed.created)
    if observed.extensions:
        metadata["annotations"] = dict(observed.extensions)
    return {"apiVersion": API_VERSION, "kind": KIND, "metadata": metadata, "spec": observed.spec}


def spec_versions(observations: Iterable[JobObserved]) -> tuple[SpecVersion, ...]:
    """One version per generation (its first observation), oldest first."""
    first: dict[int, JobObserved] = {}
    for observed in observations:
        first.setdefault(observed.generation, observed)
    return tuple(
        SpecVersion(
            generation=generation,
            observed=observed.time,
            yaml=yaml.safe_dump(manifest(observed), sort_keys=False, allow_unicode=True),
        )
        for generation, observed in sorted(first.items())
    )
