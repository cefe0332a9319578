"""`lavalog job ACTION NAMESPACE/NAME`: issue a command to a job, as `vcctl job` does.

The command is a `bus.volcano.sh/v1alpha1` Command owned by the Job, exactly as
`vcctl job suspend` makes it (`lavalog.controller.commands`, which the web UI's buttons
use too); the controller turns it into a CommandIssued observation,
deletes it, and the decider acts on it.
"""

from __future__ import annotations

import argparse
import asyncio
import sys

from lavalog.controller.commands import ACTIONS, command_object, issue_command
from lavalog.controller.kube import (
    KUBECONFIG_HELP,
    KubeConfigError,
    KubeError,
    choose_kubeconfig,
    connect,
)
from lavalog.events.topics import split_job_key

#: bench/chaos.py and the tests make Commands as this command does
__all__ = ["ACTIONS", "command_object", "configure", "run"]


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


async def _issue(
    kubeconfig: str | None, namespace: str, name: str, action: str, origin: str = "--kubeconfig"
) -> str:
    async with connect(kubeconfig, origin=origin) as kube:
        return await issue_command(kube, namespace, name, action)
