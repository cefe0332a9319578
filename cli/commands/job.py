"""`lavalog job ACTION NAMESPACE/NAME`: issue a command to a job, as `vcctl job` does.

The command is a `bus.volcano.sh/v1alpha1` Command owned by the Job, exactly as
`vcctl job suspend` makes it; the controller turns it into a CommandIssued observation,
deletes it, and the decider acts on it.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

import msgspec

from lavalog.controller.kube import (
    KUBECONFIG_HELP,
    KubeConfigError,
    KubeError,
    choose_kubeconfig,
    connect,
)
from lavalog.events.topics import split_job_key
from lavalog.events.volcano.api import API_VERSION, KIND, Action

#: subcommand -> Volcano action; suspend and resume are vcctl's names
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


class _Job(msgspec.Struct):
    metadata: _Meta


def configure(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "suspend/abort: kill the pods, keep the job (AbortJob; resume brings it back). "
        "resume: ResumeJob. restart: RestartJob (counts a retry). terminate: TerminateJob "
        "(final). complete: CompleteJob (kill the rest, mark Completed)."
    )
    parser.add_argument("action", choices=sorted(ACTIONS))
    parser.add_argument("job", metavar="NAMESPACE/NAME")
    parser.add_argument("--kubeconfig", help=KUBECONFIG_HELP)


def run(args: argparse.Namespace) -> int:
    try:
        namespace, name = split_job_key(args.job)
    except ValueError as exc:
        print(f"lavalog job: {exc}", file=sys.stderr)
        return 2
    try:
        kubeconfig = choose_kubeconfig(args.kubeconfig)
        created = asyncio.run(
            _issue(kubeconfig.path, namespace, name, ACTIONS[args.action], kubeconfig.origin)
        )
    except (KubeError, KubeConfigError) as exc:
        print(f"lavalog job: {exc}", file=sys.stderr)
        return 1
    print(f"command {namespace}/{created} issued: {ACTIONS[args.action]} {namespace}/{name}")
    return 0


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
        "apiVersion": "bus.volcano.sh/v1alpha1",
        "kind": "Command",
        "metadata": {
            "generateName": f"{name}-{action.lower()}-",
            "namespace": namespace,
            "ownerReferences": [owner],
        },
        "target": owner,
        "action": action,
    }


async def _issue(
    kubeconfig: str | None, namespace: str, name: str, action: str, origin: str = "--kubeconfig"
) -> str:
    async with connect(kubeconfig, origin=origin) as kube:
        path = f"/apis/{API_VERSION}/namespaces/{namespace}/jobs/{name}"
        job = msgspec.json.decode(await kube.request("GET", path), type=_Job)
        body = command_object(namespace, name, job.metadata.uid, action)
        created = await kube.request(
            "POST", f"/apis/bus.volcano.sh/v1alpha1/namespaces/{namespace}/commands", body=body
        )
        return msgspec.json.decode(created, type=_Job).metadata.name
