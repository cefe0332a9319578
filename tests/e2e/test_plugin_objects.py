"""The svc and ssh plugins' objects over a job's runs, through the whole system: a
restarted job gets a new ssh key Secret (Volcano deletes the plugins' objects whenever it
kills the whole job and creates them again for the next run), and an aborted job leaves
none of them behind."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from lavalog.simulator import registry
from tests.e2e.conftest import NAMESPACE, System, job_phase
from tests.e2e.jobs import job, task

pytestmark = pytest.mark.integration

NAME = "ssh-restart"
#: (resource, name) of everything svc and ssh create for the job
OBJECTS = (
    (registry.SERVICE, NAME),
    (registry.CONFIGMAP, f"{NAME}-svc"),
    (registry.NETWORK_POLICY, NAME),
    (registry.SECRET, f"{NAME}-ssh"),
)


def retry_count(system: System) -> int:
    return int(((system.log.job(NAME) or {}).get("status") or {}).get("retryCount", 0))


def secret(system: System) -> dict[str, Any] | None:
    return system.cluster.objects.find(registry.SECRET, NAMESPACE, f"{NAME}-ssh")


def present(system: System) -> list[str]:
    return [
        f"{resource.kind}/{name}"
        for resource, name in OBJECTS
        if system.cluster.objects.find(resource, NAMESPACE, name) is not None
    ]


async def test_restart_gives_new_keys_and_abort_deletes_plugin_objects(system: System) -> None:
    await system.submit(job(NAME, task("worker", 2), plugins={"svc": [], "ssh": []}))
    await system.until_phase(NAME, ["Running"], 30)
    assert present(system) == [f"{r.kind}/{n}" for r, n in OBJECTS]
    first = secret(system)
    assert first is not None
    first_key = base64.b64decode(first["data"]["id_rsa"]).decode()
    assert first_key.startswith("-----BEGIN RSA PRIVATE KEY-----")

    await system.command(NAME, "restart")
    await system.log.until(
        lambda: retry_count(system) == 1 and job_phase(system.log.job(NAME)) == "Running",
        30,
        "the job running again after RestartJob",
    )
    second = secret(system)
    assert second is not None
    assert second["metadata"]["uid"] != first["metadata"]["uid"]
    assert base64.b64decode(second["data"]["id_rsa"]).decode() != first_key
    assert present(system) == [f"{r.kind}/{n}" for r, n in OBJECTS]
    pods = system.log.pods_of(NAME)
    assert {p["spec"]["volumes"][-1]["secret"]["secretName"] for p in pods} == {f"{NAME}-ssh"}

    await system.command(NAME, "abort")
    await system.until_phase(NAME, ["Aborted"], 30)
    await system.log.until(lambda: not present(system), 30, "svc and ssh objects deleted")
