"""Volcano Commands, made as `vcctl job suspend` and `resume` make them.

A Command (`bus.volcano.sh/v1alpha1`) asks the job controller to take an action on a Job
once: lavalog's watchers turn it into a CommandIssued observation and delete it, as
Volcano's controller does. `lavalog job ACTION` and the projections' job page (its
suspend, resume and restart buttons) both create them here, with whatever identity their
client speaks as: the kubeconfig's for the command line, the caller's own token for the
web UI.
"""

from __future__ import annotations

from typing import Any

import msgspec

from lavalog.controller.kube import Kube
from lavalog.events.volcano.api import API_VERSION, KIND, Action

#: Commands' API group and version
COMMAND_API_VERSION = "bus.volcano.sh/v1alpha1"

#: verb -> Volcano action; `suspend` and `resume` are vcctl's names (vcctl's `job suspend`
#: is AbortJob); vcctl has no restart: `restart` is `lavalog job restart`'s RestartJob
ACTIONS = {
    "suspend": Action.ABORT_JOB,
    "resume": Action.RESUME_JOB,
    "restart": Action.RESTART_JOB,
    "abort": Action.ABORT_JOB,
    "terminate": Action.TERMINATE_JOB,
    "complete": Action.COMPLETE_JOB,
}


class _Meta(msgspec.Struct):
    name: str
    uid: str


class _Named(msgspec.Struct):
    metadata: _Meta


def command_object(namespace: str, name: str, uid: str, action: str) -> dict[str, Any]:
    """The Command `vcctl job` creates (its `util.CreateJobCommand`): named
    `<job>-<action in lower case>-<random>`, owned by the job through a controller
    reference, and aiming at it with that same reference in `target` (Go's
    `TargetObject`, JSON `target`: the field Volcano's controller reads)."""
    owner = {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "name": name,
        "uid": uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }
    return {
        "apiVersion": COMMAND_API_VERSION,
        "kind": "Command",
        "metadata": {
            "generateName": f"{name}-{action.lower()}-",
            "namespace": namespace,
            "ownerReferences": [owner],
        },
        "target": owner,
        "action": action,
    }


async def issue_command(kube: Kube, namespace: str, name: str, action: str) -> str:
    """Create the Command of `action` on Job `namespace/name` as `CreateJobCommand` does:
    read the Job (for its uid, so the Command goes with it), then create the Command.
    Returns the Command's name; KubeError as the API server answers (404: no such Job;
    403: the client's user may not)."""
    path = f"/apis/{API_VERSION}/namespaces/{namespace}/jobs/{name}"
    job = msgspec.json.decode(await kube.request("GET", path), type=_Named)
    body = command_object(namespace, name, job.metadata.uid, action)
    created = await kube.request(
        "POST", f"/apis/{COMMAND_API_VERSION}/namespaces/{namespace}/commands", body=body
    )
    return msgspec.json.decode(created, type=_Named).metadata.name
