"""Shared helpers for the simulator tests: untyped API handles (bodies are plain dicts,
as a controller on hot paths sends them), object builders and polling."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient
from kubernetes_asyncio.client.exceptions import ApiException

VC = ("batch.volcano.sh", "v1alpha1")
SCHED = ("scheduling.volcano.sh", "v1beta1")
MERGE = "application/merge-patch+json"


def core_api(api: ApiClient) -> Any:
    return client.CoreV1Api(api)


def custom_api(api: ApiClient) -> Any:
    return client.CustomObjectsApi(api)


def pod(name: str, labels: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    """A pod no scheduler picks up (schedulerName "none") unless `spec` says otherwise."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {"schedulerName": "none", "containers": [{"name": "c", "image": "x"}], **spec},
    }


def running_pod(name: str, command: list[str], **spec: Any) -> dict[str, Any]:
    """A pod the default scheduler binds and the kubelet runs with `command`."""
    containers = [{"name": "main", "image": "busybox", "command": command}]
    return pod(name, schedulerName="default-scheduler", containers=containers, **spec)


def vcjob(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {"minAvailable": 1, "tasks": [{"name": "t", "replicas": 1}]},
    }


async def event_messages(api: ApiClient, kind: str, name: str, reason: str) -> list[str]:
    """The messages of the Events with `reason` about the object `kind`/`name`."""
    found = await core_api(api).list_namespaced_event(
        "default",
        field_selector=f"involvedObject.kind={kind},involvedObject.name={name},reason={reason}",
    )
    return [e.message for e in found.items]


async def eventually(check: Callable[[], Awaitable[bool]], within: float = 5.0) -> None:
    """Poll `check` until it is true (API errors count as not yet)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while True:
        try:
            if await check():
                return
        except ApiException:
            pass
        if loop.time() > deadline:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(0.02)
