"""What a Job costs the API server on its way to Running, counted by the API server.

Volcano's job controller makes, for a Job on the happy path, a PodGroup create, a create
per pod and a status write per sync that changes the status (`syncJob`); it reads the Job
from its informer's cache and records no Event (`processNextReq` records `ExecuteAction`
only for an action other than SyncJob). lavalog makes the same calls, its status writes
coalesced when they queue up; its own Events for phase changes are written only with
`--phase-events`.
"""

from __future__ import annotations

import asyncio
from collections import Counter

import msgspec
import pytest

from lavalog.controller.kafka import KafkaSettings
from lavalog.events.volcano.reasons import COMPONENT
from tests.e2e.conftest import System, job_phase, running_system
from tests.e2e.jobs import job, task

pytestmark = pytest.mark.integration

JOBS = 4
PODS = 3
#: what a Job's way to Running is made of; the rest (Leases, lists, watches) is per replica
PER_JOB = {"jobs", "jobs/status", "podgroups", "pods", "events"}
EVENTS = "/api/v1/namespaces/default/events"


async def until_running(system: System, prefix: str) -> Counter[str]:
    """Submit the jobs and wait until each is Running (from the cluster's own log, with no
    request of this test's); the calls made meanwhile, the submissions taken off."""
    before = Counter(system.cluster.api_calls)
    names = [f"{prefix}-{n}" for n in range(JOBS)]
    for name in names:
        await system.submit(job(name, task("main", PODS)))
    await system.log.until(
        lambda: all(job_phase(system.log.job(name)) == "Running" for name in names), 60
    )
    calls = Counter(system.cluster.api_calls) - before
    calls["create jobs"] -= JOBS
    return Counter(
        {
            call: n
            for call, n in calls.items()
            if n and call.split()[1] in PER_JOB and call.split()[0] not in ("list", "watch")
        }
    )


async def lavalogs_events(system: System) -> dict[str, tuple[str, str]]:
    """The Events lavalog wrote (as Volcano's controller): name -> (job, reason)."""
    listed = msgspec.json.decode(await system.kube.request("GET", EVENTS))
    return {
        event["metadata"]["name"]: (event["involvedObject"]["name"], event["reason"])
        for event in listed["items"]
        if event["source"].get("component") == COMPONENT
    }


async def test_a_job_costs_what_volcanos_controller_costs_no_read_no_event(
    e2e_kafka: KafkaSettings,
) -> None:
    async with running_system(e2e_kafka) as system:
        calls = await until_running(system, "calls")
        written = await lavalogs_events(system)
    status = calls.pop("update jobs/status")
    calls.pop("create events", None)
    # no read (the informer holds each Job): a PodGroup and the pods
    assert calls == {"create podgroups": JOBS, "create pods": JOBS * PODS}, calls
    # no Event of lavalog's own; Volcano's PodGroupPending when the scheduler said so
    assert {reason for _, reason in written.values()} <= {"PodGroupPending"}, written
    # every phase reaches the API (Pending, Running), and no more often than Volcano's
    # syncJob writes it: once initiated, once the pods are made, once per pod that runs
    assert 2 * JOBS <= status <= JOBS * (2 + PODS), status


async def test_phase_changes_are_events_when_asked_for(e2e_kafka: KafkaSettings) -> None:
    async with running_system(e2e_kafka, phase_events=True) as system:
        calls = await until_running(system, "phases")

        wanted = {(f"phases-{n}", phase) for n in range(JOBS) for phase in ("Pending", "Running")}
        async with asyncio.timeout(30):  # Events are written off the jobs' lanes: maybe later
            while True:
                if wanted <= set((await lavalogs_events(system)).values()):
                    break
                await asyncio.sleep(0.05)
    assert calls["get jobs"] == 0, calls
