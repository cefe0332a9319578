"""The Events the real schedulers and kubelet write, so `kubectl describe` says why a job
waits: `Scheduled` / `FailedScheduling` on pods (kube-scheduler, Volcano), an
`Unschedulable` Event and condition on a PodGroup whose gang cannot fit (Volcano),
`Pulled` / `Created` / `Started` / `Killing` / `BackOff` on pods (kubelet)."""

from __future__ import annotations

from typing import Any

from kubernetes_asyncio.client import ApiClient

from tests.simulator.kube import SCHED, core_api, custom_api, eventually, running_pod
from tests.simulator.test_scheduler import podgroup, worker


async def events_of(api: ApiClient, kind: str, name: str) -> list[Any]:
    found = await core_api(api).list_namespaced_event(
        "default", field_selector=f"involvedObject.kind={kind},involvedObject.name={name}"
    )
    return sorted(found.items, key=lambda e: int(e.metadata.resource_version))


def reasons(events: list[Any]) -> list[str]:
    return [e.reason for e in events]


async def test_default_scheduler_writes_scheduled_and_failed_scheduling(
    kube_api: ApiClient,
) -> None:
    core = core_api(kube_api)
    created = await core.create_namespaced_pod("default", running_pod("fits", ["sleep", "1"]))
    await eventually(lambda: _has(kube_api, "Pod", "fits", "Scheduled"))
    (scheduled,) = [e for e in await events_of(kube_api, "Pod", "fits") if e.reason == "Scheduled"]
    node = (await core.read_namespaced_pod("fits", "default")).spec.node_name
    assert scheduled.type == "Normal"
    assert scheduled.message == f"Successfully assigned default/fits to {node}"
    assert scheduled.source.component == "default-scheduler"
    assert scheduled.involved_object.uid == created.metadata.uid
    assert scheduled.involved_object.api_version == "v1"

    huge = running_pod("huge", ["sleep", "1"])
    huge["spec"]["containers"][0]["resources"] = {"requests": {"nvidia.com/gpu": "100"}}
    await core.create_namespaced_pod("default", huge)
    await eventually(lambda: _has(kube_api, "Pod", "huge", "FailedScheduling"))
    (failed,) = await events_of(kube_api, "Pod", "huge")
    assert failed.type == "Warning" and failed.reason == "FailedScheduling"
    assert failed.message == "0/2 nodes are available: 2 Insufficient nvidia.com/gpu."


async def test_a_gang_that_cannot_fit_gets_unschedulable_event_and_condition(
    kube_api: ApiClient,
) -> None:
    """Three 5-GPU members on two 8-GPU nodes: two would fit, the third not. Volcano's
    scheduler says so on the PodGroup (condition and Event, which count differently:
    unready members vs pending ones) and on each pod: the two that fit may go to a node
    once the gang can, the third fits nowhere."""
    await custom_api(kube_api).create_namespaced_custom_object(
        *SCHED, "default", "podgroups", podgroup("big", 3)
    )
    for i in range(3):
        pod = worker("big", i, ["sleep", "1"], gang=True)
        pod["spec"]["containers"][0]["resources"] = {
            "requests": {"nvidia.com/gpu": "5"},
            "limits": {"nvidia.com/gpu": "5"},
        }
        await core_api(kube_api).create_namespaced_pod("default", pod)
    fit_error = (
        "pod group is not ready, 3 Pending, 3 minAvailable; Pending: 1 Unschedulable, "
        "2 Schedulable. Origin reason is big-worker-2: 0/2 nodes are unavailable: "
        "2 Insufficient nvidia.com/gpu."
    )
    expected = f"3/3 tasks in gang unschedulable: {fit_error}"

    async def said() -> bool:
        return any(e.message == expected for e in await events_of(kube_api, "PodGroup", "big"))

    await eventually(said)
    event = next(e for e in await events_of(kube_api, "PodGroup", "big") if e.message == expected)
    assert (event.type, event.reason, event.source.component) == (
        "Warning",
        "Unschedulable",
        "volcano",
    )
    assert event.involved_object.api_version == "scheduling.volcano.sh/v1beta1"
    pg = await custom_api(kube_api).get_namespaced_custom_object(
        *SCHED, "default", "podgroups", "big"
    )
    (condition,) = [c for c in pg["status"]["conditions"] if c["type"] == "Unschedulable"]
    assert (condition["status"], condition["reason"]) == ("True", "NotEnoughResources")
    assert condition["message"] == f"1/3 tasks in gang unschedulable: {fit_error}"
    assert condition["transitionID"] and condition["lastTransitionTime"]
    assert pg["status"]["phase"] == "Inqueue"  # admitted (no minResources), not placed
    core = core_api(kube_api)
    for name, reason, message in (
        (
            "big-worker-0",
            "Schedulable",
            "Pod default/big-worker-0 can possibly be assigned to node-1, once minAvailable "
            "is satisfied",
        ),
        (
            "big-worker-2",
            "Unschedulable",
            "0/2 nodes are unavailable: 2 Insufficient nvidia.com/gpu.",
        ),
    ):
        got = await core.read_namespaced_pod(name, "default")
        scheduled = next(c for c in got.status.conditions if c.type == "PodScheduled")
        assert (scheduled.status, scheduled.reason, scheduled.message) == ("False", reason, message)
        # one FailedScheduling per change of the condition (sessions that saw fewer pods
        # said something else before)
        matching = [e for e in await events_of(kube_api, "Pod", name) if e.message == message]
        assert [(e.reason, e.source.component) for e in matching] == [
            ("FailedScheduling", "volcano")
        ]


async def test_a_gang_that_fits_is_scheduled_with_events(kube_api: ApiClient) -> None:
    await custom_api(kube_api).create_namespaced_custom_object(
        *SCHED, "default", "podgroups", podgroup("small", 2)
    )
    for i in range(2):
        await core_api(kube_api).create_namespaced_pod(
            "default", worker("small", i, ["sleep", "1"], gang=True)
        )
    await eventually(lambda: _has(kube_api, "PodGroup", "small", "Scheduled"))
    events = await events_of(kube_api, "PodGroup", "small")
    (ready,) = [e for e in events if e.reason == "Scheduled"]
    assert ready.type == "Normal" and ready.message == "pod group is ready"
    # while it is Inqueue, its pods bound but not yet seen running, vc-scheduler still warns
    assert {(e.type, e.reason) for e in events if e is not ready} <= {("Warning", "Unschedulable")}
    assert any(
        e.message
        == "0/2 tasks in gang unschedulable: pod group is ready, 2 Binding, 2 minAvailable"
        for e in events
    )
    await eventually(lambda: _has(kube_api, "Pod", "small-worker-1", "Scheduled"))


async def test_kubelet_writes_container_events(kube_api: ApiClient) -> None:
    core = core_api(kube_api)
    await core.create_namespaced_pod("default", running_pod("web", ["sleep", "3600"]))
    await eventually(lambda: _has(kube_api, "Pod", "web", "Started"))
    events = await events_of(kube_api, "Pod", "web")
    assert reasons(events) == ["Scheduled", "Pulled", "Created", "Started"]
    started = events[-1]
    node = (await core.read_namespaced_pod("web", "default")).spec.node_name
    assert started.source.component == "kubelet" and started.source.host == node
    assert started.involved_object.field_path == "spec.containers{main}"
    assert started.message == "Started container main"
    assert events[1].message == 'Container image "busybox" already present on machine'
    await core.delete_namespaced_pod("web", "default", grace_period_seconds=5)
    await eventually(lambda: _has(kube_api, "Pod", "web", "Killing"))
    (killing,) = [e for e in await events_of(kube_api, "Pod", "web") if e.reason == "Killing"]
    assert killing.message == "Stopping container main"


async def test_kubelet_writes_back_off_and_counts_repeats(kube_api: ApiClient) -> None:
    pod = running_pod("crash", ["sh", "-c", "exit 1"], restartPolicy="OnFailure")
    await core_api(kube_api).create_namespaced_pod("default", pod)
    await eventually(lambda: _has(kube_api, "Pod", "crash", "BackOff"))

    async def restarted_twice() -> bool:
        found = {e.reason: e for e in await events_of(kube_api, "Pod", "crash")}
        return bool(found["Started"].count >= 2 and found["BackOff"].count >= 2)

    await eventually(restarted_twice, within=20)
    (back_off,) = [e for e in await events_of(kube_api, "Pod", "crash") if e.reason == "BackOff"]
    assert back_off.type == "Warning"
    assert back_off.message.startswith(
        "Back-off restarting failed container main in pod crash_default("
    )


async def _has(api: ApiClient, kind: str, name: str, reason: str) -> bool:
    return reason in reasons(await events_of(api, kind, name))
