"""Writes `deploy/crds/`: the CustomResourceDefinitions of the Volcano kinds lavalog uses.

    python -m lavalog.apimachinery.crdgen            # rewrite deploy/crds/*.yaml
    python -m lavalog.apimachinery.crdgen --check    # exit 1 if a checked-in file is stale

The schemas are written here from the Go types of volcano-sh/apis
(`pkg/apis/batch/v1alpha1/job.go`, `bus/v1alpha1/commands.go`,
`scheduling/v1beta1/types.go`): field names, types, bounds, enums, defaults and
subresources as their kubebuilder markers declare them. Embedded Kubernetes types
(the task pod template, the volume claim spec, the Command's owner reference) come
from `kube_schema`. The same files install on a real cluster and drive the simulator
(`crds.py`), so a field the simulator keeps is a field a real API server keeps.
"""

from __future__ import annotations

import argparse
import copy
import sys
from pathlib import Path
from typing import Any

import yaml

from lavalog.apimachinery import kube_schema, names
from lavalog.events.volcano.api import Event, JobPhase

Schema = dict[str, Any]

#: the `deploy/crds` directory of a source checkout
SOURCE_DIR = Path(__file__).resolve().parent.parent / "deploy" / "crds"

#: the job phases and the bus events (Volcano's job.go, events.go): the values of lavalog's
#: own `JobPhase` and `Event`, in their order
_JOB_PHASES = [phase.value for phase in JobPhase]
_BUS_EVENTS = [event.value for event in Event]


# schema builders ---------------------------------------------------------------------


def _described(schema: Schema, description: str | None) -> Schema:
    if description:
        schema["description"] = description
    return schema


def obj(
    properties: dict[str, Schema], description: str | None = None, *, required: tuple[str, ...] = ()
) -> Schema:
    schema: Schema = {"type": "object", "properties": properties}
    if required:
        schema["required"] = list(required)
    return _described(schema, description)


def string(description: str | None = None, **bounds: Any) -> Schema:
    return _described({"type": "string", **_bounds(bounds)}, description)


def int32(description: str | None = None, **bounds: Any) -> Schema:
    return _described({"type": "integer", "format": "int32", **_bounds(bounds)}, description)


def integer(description: str | None = None, **bounds: Any) -> Schema:
    return _described({"type": "integer", **_bounds(bounds)}, description)


def boolean(description: str | None = None) -> Schema:
    return _described({"type": "boolean"}, description)


def array(items: Schema, description: str | None = None, **bounds: Any) -> Schema:
    return _described({"type": "array", "items": items, **_bounds(bounds)}, description)


def map_of(values: Schema, description: str | None = None) -> Schema:
    return _described({"type": "object", "additionalProperties": values}, description)


def timestamp(description: str | None = None) -> Schema:
    return _described({"type": "string", "format": "date-time"}, description)


def resource_list(description: str | None = None) -> Schema:
    """A `v1.ResourceList`: resource name -> Quantity (`1`, `"500m"`, `"8Gi"`)."""
    return map_of(copy.deepcopy(kube_schema.INT_OR_STRING), description)


def kube(model_name: str, description: str | None = None) -> Schema:
    """A Kubernetes type embedded in a Volcano type, from its model."""
    return _described(copy.deepcopy(kube_schema.of(model_name)), description)


def _bounds(bounds: dict[str, Any]) -> Schema:
    names = {
        "minimum": "minimum",
        "maximum": "maximum",
        "max_length": "maxLength",
        "min_length": "minLength",
        "pattern": "pattern",
        "enum": "enum",
        "default": "default",
        "min_items": "minItems",
    }
    return {names[k]: v for k, v in bounds.items()}


# the Volcano types -------------------------------------------------------------------


def _network_topology() -> Schema:
    return obj(
        {
            "mode": string(
                "hard: a job must stay within the allowed tier; soft: best effort",
                enum=["hard", "soft"],
                default="hard",
            ),
            "highestTierAllowed": integer(
                "The highest tier a job may cross when scheduled", minimum=0
            ),
            "highestTierName": string(
                "The highest tier name a job may cross (not with highestTierAllowed)",
                max_length=253,
            ),
        },
        "The network topology constraint, used with the HyperNode CRD",
    )


def _lifecycle_policy() -> Schema:
    return obj(
        {
            "action": string("The action taken when the event or exit code occurs"),
            "event": string("The event the action reacts to", enum=_BUS_EVENTS),
            "events": array(string(enum=_BUS_EVENTS), "The events the action reacts to"),
            "exitCode": int32(
                "The container exit code the action reacts to (not with event/events)"
            ),
            "timeout": string("How long to wait before the action is taken (a duration, e.g. 10m)"),
        },
        "An action taken on an event or an exit code",
    )


def _pod_template() -> Schema:
    """PodTemplateSpec as Volcano's CRD embeds it: the pod spec in full, and of the
    template's metadata only what an embedded ObjectMeta keeps."""
    template = kube("V1PodTemplateSpec", "The pod created for each replica of this task")
    template["properties"]["metadata"] = obj(
        {
            "annotations": map_of(string()),
            "finalizers": array(string()),
            "labels": map_of(string()),
            "name": string(),
            "namespace": string(),
        }
    )
    return template


def _task() -> Schema:
    return obj(
        {
            "name": string(
                "The task's name, unique within the job",
                max_length=names.LABEL_MAX_LENGTH,
                pattern=names.LABEL_PATTERN,
            ),
            "replicas": int32("How many pods this task runs", minimum=0),
            "minAvailable": int32(
                "The minimal available pods of this task; defaults to its replicas",
                minimum=0,
            ),
            "template": _pod_template(),
            "policies": array(_lifecycle_policy(), "The lifecycle policies of this task"),
            "topologyPolicy": string(
                "The NUMA topology policy of this task's pods",
                enum=["none", "best-effort", "restricted", "single-numa-node"],
            ),
            "maxRetry": int32("How many retries before this task is marked failed", minimum=0),
            "dependsOn": obj(
                {
                    "name": array(string(), "The tasks this task depends on"),
                    "iteration": string(
                        "any or all: whether one or every dependency must be ready"
                    ),
                },
                "The tasks this task waits for",
            ),
            "partitionPolicy": obj(
                {
                    "totalPartitions": int32("How many groups the pods form", minimum=1),
                    "partitionSize": int32("How many pods each group has", minimum=1),
                    "networkTopology": _network_topology(),
                    "minPartitions": int32("The minimal number of groups", minimum=0, default=0),
                },
                "How the task's pods are split into groups",
                required=("partitionSize", "totalPartitions"),
            ),
        },
        "A set of identical pods of the job",
    )


def _job_spec() -> Schema:
    return obj(
        {
            "schedulerName": string("The default schedulerName of the tasks' pods", max_length=63),
            "minAvailable": int32(
                "The minimal available pods to run the job (gang size); defaults to the sum "
                "of the tasks' replicas",
                minimum=0,
            ),
            "volumes": array(
                obj(
                    {
                        "mountPath": string(
                            "Where the volume is mounted in every container",
                            min_length=1,
                            pattern="^[^:]+$",
                        ),
                        "volumeClaimName": string(
                            "An existing PersistentVolumeClaim to mount", max_length=253
                        ),
                        "volumeClaim": kube(
                            "V1PersistentVolumeClaimSpec",
                            "The claim the job creates for this volume",
                        ),
                    },
                    required=("mountPath",),
                ),
                "The volumes mounted into every pod of the job",
            ),
            "tasks": array(_task(), "The tasks of the job", min_items=1),
            "policies": array(_lifecycle_policy(), "The default lifecycle policies of tasks"),
            "plugins": map_of(
                array(string()), "Job plugins (env, svc, ssh, ...) and their arguments"
            ),
            "runningEstimate": string("How long the job is expected to run (a duration)"),
            "queue": string(
                "The scheduler queue of the job",
                default="default",
                max_length=names.SUBDOMAIN_MAX_LENGTH,
                pattern=names.SUBDOMAIN_PATTERN,
            ),
            "maxRetry": int32(
                "How many retries before the job is marked failed", default=3, minimum=0
            ),
            "ttlSecondsAfterFinished": int32(
                "Seconds after the job finished before it is deleted", minimum=0
            ),
            "priorityClassName": string(
                "The priority class of the job's pods",
                max_length=names.SUBDOMAIN_MAX_LENGTH,
                pattern=names.SUBDOMAIN_PATTERN,
            ),
            "minSuccess": int32("The minimal succeeded pods for the job to succeed", minimum=1),
            "networkTopology": _network_topology(),
        },
        "The desired behaviour of the job: tasks, gang size, policies, plugins",
    )


def _job_status() -> Schema:
    def count(what: str) -> Schema:
        return int32(what, minimum=0)

    return obj(
        {
            "state": obj(
                {
                    "phase": string("The phase of the job", enum=_JOB_PHASES),
                    "reason": string("Why the job entered the phase (one CamelCase word)"),
                    "message": string("Details of the last transition"),
                    "lastTransitionTime": timestamp("When the phase last changed"),
                },
                "The current state of the job",
            ),
            "minAvailable": count("The minimal available pods to run the job"),
            "taskStatusCount": map_of(
                obj({"phase": map_of(int32(), "pod phase -> number of pods")}),
                "The pods of each task by phase",
            ),
            "pending": count("Pending pods"),
            "running": count("Running pods"),
            "succeeded": count("Succeeded pods"),
            "failed": count("Failed pods"),
            "terminating": count("Terminating pods"),
            "unknown": count("Pods in phase Unknown"),
            "version": count("The job's version, bumped by every restart"),
            "retryCount": count("How many times the job was retried"),
            "runningDuration": string("How long the job ran (a duration)"),
            "controlledResources": map_of(
                string(), "Resources the job's plugins created (Services, ConfigMaps, ...)"
            ),
            "conditions": array(
                obj(
                    {
                        "status": string("The phase the job entered"),
                        "lastTransitionTime": timestamp("When it entered it"),
                    },
                    required=("status",),
                ),
                "The phases the job went through",
            ),
        },
        "The observed state of the job",
    )


def _podgroup() -> Schema:
    return _root(
        obj(
            {
                "minMember": int32(
                    "The minimal number of pods to run the group (gang size)", minimum=0
                ),
                "minTaskMember": map_of(int32(), "The minimal number of pods of each task"),
                "queue": string(
                    "The queue of the group",
                    default="default",
                    max_length=names.SUBDOMAIN_MAX_LENGTH,
                    pattern=names.SUBDOMAIN_PATTERN,
                ),
                "priorityClassName": string("The priority class of the group", max_length=253),
                "minResources": resource_list("The minimal resources to run the group"),
                "networkTopology": _network_topology(),
                "subGroupPolicy": array(
                    obj(
                        {
                            "name": string(max_length=253),
                            "networkTopology": _network_topology(),
                            "subGroupSize": int32(minimum=1, default=1),
                            "minSubGroups": int32(minimum=0, default=0),
                            "labelSelector": kube("V1LabelSelector"),
                            "matchLabelKeys": array(string()),
                        }
                    ),
                    "How the group's pods are split into sub-groups",
                ),
            },
            "The desired behaviour of the pod group",
        ),
        obj(
            {
                "phase": string(
                    "The phase of the group",
                    enum=["Pending", "Running", "Unknown", "Inqueue", "Completed"],
                ),
                "conditions": array(
                    obj(
                        {
                            "type": string("Unschedulable or Scheduled"),
                            "status": string("True, False or Unknown"),
                            "transitionID": string(),
                            "lastTransitionTime": timestamp(),
                            "reason": string("Why (one CamelCase word)"),
                            "message": string("Details"),
                        }
                    ),
                    "The scheduler's conditions on the group",
                ),
                "running": int32("Running pods", minimum=0),
                "succeeded": int32("Succeeded pods", minimum=0),
                "failed": int32("Failed pods", minimum=0),
            },
            "The observed state of the pod group",
        ),
        "A gang of pods scheduled together by the Volcano scheduler",
    )


def _queue() -> Schema:
    return _root(
        obj(
            {
                "weight": int32(
                    "The queue's share of the cluster", default=1, minimum=1, maximum=65535
                ),
                "capability": resource_list("The most the queue's jobs may use"),
                "reclaimable": boolean("Whether other queues may reclaim what it uses"),
                "extendClusters": array(
                    obj(
                        {
                            "name": string(),
                            "weight": int32(),
                            "capacity": resource_list(),
                        }
                    )
                ),
                "guarantee": obj({"resource": resource_list("Resources reserved for the queue")}),
                "affinity": obj(
                    {
                        "nodeGroupAffinity": obj(
                            {
                                "requiredDuringSchedulingIgnoredDuringExecution": array(string()),
                                "preferredDuringSchedulingIgnoredDuringExecution": array(string()),
                            }
                        ),
                        "nodeGroupAntiAffinity": obj(
                            {
                                "requiredDuringSchedulingIgnoredDuringExecution": array(string()),
                                "preferredDuringSchedulingIgnoredDuringExecution": array(string()),
                            }
                        ),
                    }
                ),
                "type": string(max_length=253),
                "parent": string(
                    "The parent queue (hierarchical queues)",
                    max_length=names.SUBDOMAIN_MAX_LENGTH,
                    pattern=names.SUBDOMAIN_PATTERN,
                ),
                "deserved": resource_list("The resources the queue deserves"),
                "priority": int32("The queue's priority", minimum=0),
                "dequeueStrategy": string(
                    "fifo or traverse", enum=["fifo", "traverse"], default="traverse"
                ),
            },
            "The desired behaviour of the queue",
        ),
        obj(
            {
                "state": string(
                    "The state of the queue", enum=["Open", "Closed", "Closing", "Unknown"]
                ),
                "unknown": int32(minimum=0),
                "pending": int32(minimum=0),
                "running": int32(minimum=0),
                "inqueue": int32(minimum=0),
                "completed": int32(minimum=0),
                "reservation": obj({"nodes": array(string()), "resource": resource_list()}),
                "allocated": resource_list("The resources the queue's jobs use"),
            },
            "The observed state of the queue",
        ),
        "A scheduling queue of the Volcano scheduler",
    )


def _command() -> Schema:
    target = kube("V1OwnerReference", "The object the command acts on")
    return obj(
        {
            "apiVersion": string(),
            "kind": string(),
            "metadata": {"type": "object"},
            "action": string("The action to take on the target (AbortJob, ResumeJob, ...)"),
            "target": target,
            "reason": string("Why (one CamelCase word)"),
            "message": string("Details of the command"),
        },
        "A request to act on a Volcano object, carried out by its controller",
    )


def _root(spec: Schema, status: Schema, description: str) -> Schema:
    return obj(
        {
            "apiVersion": string(),
            "kind": string(),
            "metadata": {"type": "object"},
            "spec": spec,
            "status": status,
        },
        description,
    )


def _crd(
    group: str,
    version: str,
    kind: str,
    plural: str,
    schema: Schema,
    *,
    namespaced: bool,
    short_names: list[str],
    status_subresource: bool,
    columns: list[Schema],
) -> Schema:
    served: Schema = {"name": version, "served": True, "storage": True}
    if columns:
        served["additionalPrinterColumns"] = columns
    served["schema"] = {"openAPIV3Schema": schema}
    served["subresources"] = {"status": {}} if status_subresource else {}
    names: Schema = {"kind": kind, "listKind": f"{kind}List", "plural": plural}
    if short_names:
        names["shortNames"] = short_names
    names["singular"] = kind.lower()
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "names": names,
            "scope": "Namespaced" if namespaced else "Cluster",
            "versions": [served],
        },
    }


def _column(name: str, kind: str, path: str, priority: int = 0) -> Schema:
    column: Schema = {"name": name, "type": kind, "jsonPath": path}
    if priority:
        column["priority"] = priority
    return column


def definitions() -> dict[str, Schema]:
    """File name -> CustomResourceDefinition, for every Volcano kind lavalog uses."""
    age = _column("AGE", "date", ".metadata.creationTimestamp")
    job = _root(_job_spec(), _job_status(), "A Volcano batch job: tasks of pods run as a gang")
    return {
        "batch.volcano.sh_jobs.yaml": _crd(
            "batch.volcano.sh",
            "v1alpha1",
            "Job",
            "jobs",
            job,
            namespaced=True,
            short_names=["vcjob", "vj"],
            status_subresource=True,
            columns=[
                _column("STATUS", "string", ".status.state.phase"),
                _column("minAvailable", "integer", ".status.minAvailable"),
                _column("RUNNINGS", "integer", ".status.running"),
                age,
                _column("QUEUE", "string", ".spec.queue", priority=1),
            ],
        ),
        "bus.volcano.sh_commands.yaml": _crd(
            "bus.volcano.sh",
            "v1alpha1",
            "Command",
            "commands",
            _command(),
            namespaced=True,
            short_names=[],
            status_subresource=False,
            columns=[],
        ),
        "scheduling.volcano.sh_podgroups.yaml": _crd(
            "scheduling.volcano.sh",
            "v1beta1",
            "PodGroup",
            "podgroups",
            _podgroup(),
            namespaced=True,
            short_names=["pg", "podgroup-v1beta1"],
            status_subresource=False,
            columns=[
                _column("STATUS", "string", ".status.phase"),
                _column("minMember", "integer", ".spec.minMember"),
                _column("RUNNINGS", "integer", ".status.running"),
                age,
                _column("QUEUE", "string", ".spec.queue", priority=1),
            ],
        ),
        "scheduling.volcano.sh_queues.yaml": _crd(
            "scheduling.volcano.sh",
            "v1beta1",
            "Queue",
            "queues",
            _queue(),
            namespaced=False,
            short_names=["q", "queue-v1beta1"],
            status_subresource=True,
            columns=[_column("PARENT", "string", ".spec.parent")],
        ),
    }


class _Dumper(yaml.SafeDumper):
    """Writes shared sub-schemas out in full: a CRD may not use YAML aliases."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


_COMMAND = "python -m lavalog.apimachinery.crdgen"
_HEADER = f"# Generated by `{_COMMAND}` from volcano-sh/apis; do not edit.\n"


def render(crd: Schema) -> str:
    return _HEADER + yaml.dump(crd, Dumper=_Dumper, sort_keys=True, width=100)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=_COMMAND, description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=SOURCE_DIR, help="output directory")
    parser.add_argument(
        "--check", action="store_true", help="exit 1 if a file differs instead of writing"
    )
    args = parser.parse_args(argv)
    stale = []
    for name, crd in definitions().items():
        path: Path = args.out / name
        text = render(crd)
        if args.check:
            if not path.exists() or path.read_text() != text:
                stale.append(name)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    if stale:
        print(f"stale: {', '.join(stale)}; run {_COMMAND}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
