"""The Job as the actuator reads it: the object from the API, typed where it is used.

Every object built for a Job (pods, PodGroup, Services, ConfigMaps, Secrets) is owned by
it through a controller owner reference, so that Kubernetes' garbage collector removes
them with the Job and watchers can tell the Job's objects from anyone else's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import msgspec

from lavalog.controller.admission.defaults import with_defaults
from lavalog.events.volcano.api import API_VERSION, KIND, JobSpec, TaskSpec


@dataclass(frozen=True, slots=True)
class JobView:
    name: str
    namespace: str
    uid: str
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    spec: JobSpec
    retry_count: int

    @classmethod
    def of(cls, job: Mapping[str, Any]) -> JobView:
        """Read a Job object (metadata/spec/status, as JSON from the API), its spec with
        Volcano's admission defaults (task names, schedulerName, queue, minAvailable,
        implied plugins): the decider decides on the defaulted spec, and a Job created
        where Volcano's mutating webhook does not run must still get a gang scheduler."""
        metadata = job.get("metadata") or {}
        status = job.get("status") or {}
        return cls(
            name=metadata.get("name", ""),
            namespace=metadata.get("namespace", ""),
            uid=metadata.get("uid", ""),
            labels=metadata.get("labels") or {},
            annotations=metadata.get("annotations") or {},
            spec=with_defaults(msgspec.convert(job.get("spec") or {}, JobSpec)),
            retry_count=int(status.get("retryCount", 0)),
        )

    def task(self, name: str) -> TaskSpec:
        task = self.spec.task(name)
        if task is None:
            raise KeyError(f"job {self.namespace}/{self.name} has no task {name!r}")
        return task

    def owner_reference(self) -> dict[str, Any]:
        """`metav1.NewControllerRef(job, Job)`."""
        return {
            "apiVersion": API_VERSION,
            "kind": KIND,
            "name": self.name,
            "uid": self.uid,
            "controller": True,
            "blockOwnerDeletion": True,
        }

    def owned_metadata(self, name: str) -> dict[str, Any]:
        """Metadata of an object named `name` in the job's namespace, owned by the job."""
        return {
            "name": name,
            "namespace": self.namespace,
            "ownerReferences": [self.owner_reference()],
        }
