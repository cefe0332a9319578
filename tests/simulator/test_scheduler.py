"""The scheduler: the 2 x 4-GPU deadlock of one-by-one scheduling and how gang
scheduling avoids it; PodGroup phases, conditions and queue capability."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Callable
from typing import Any

import pytest
from kubernetes_asyncio.client import ApiClient

from lavalog.simulator import registry
from lavalog.simulator.gang import Gang, Task, TaskStatus
from lavalog.simulator.selectors import Selector
from lavalog.simulator.server import SimulatedCluster
from lavalog.simulator.store import Change
from tests.simulator.kube import (
    SCHED,
    core_api,
    custom_api,
    event_messages,
    eventually,
    running_pod,
)

GPU = {"nvidia.com/gpu": "1"}


def worker(job: str, index: int, command: list[str], *, gang: bool) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": f"{job}-worker-{index}", "labels": {"job": job}}
    if gang:
        meta["annotations"] = {"scheduling.k8s.io/group-name": job}
    return {
        "metadata": meta,
        "spec": {
            "schedulerName": "volcano" if gang else "default-scheduler",
            "restartPolicy": "Never",
            "containers": [
                {
                    "name": "main",
                    "image": "x",
                    "command": command,
                    "resources": {"requests": GPU, "limits": GPU},
                }
            ],
        },
    }


def podgroup(
    name: str, min_member: int, queue: str = "default", gpus: int | None = None
) -> dict[str, Any]:
    spec: dict[str, Any] = {"minMember": min_member, "queue": queue}
    if gpus is not None:
        spec["minResources"] = {"nvidia.com/gpu": str(gpus)}
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name},
        "spec": spec,
    }


async def submit_interleaved(api: ApiClient, command: dict[str, list[str]], *, gang: bool) -> None:
    """Two 4-GPU jobs whose pods arrive interleaved, as two controllers create them."""
    core = core_api(api)
    if gang:
        for job in command:
            await custom_api(api).create_namespaced_custom_object(
                *SCHED, "default", "podgroups", podgroup(job, 4, gpus=4)
            )
    for i in range(4):
        for job, cmd in command.items():
            await core.create_namespaced_pod("default", worker(job, i, cmd, gang=gang))


async def bound_per_job(api: ApiClient) -> dict[str, int]:
    pods = await core_api(api).list_namespaced_pod("default", field_selector="spec.nodeName!=")
    counts: dict[str, int] = {}
    for p in pods.items:
        counts[p.metadata.labels["job"]] = counts.get(p.metadata.labels["job"], 0) + 1
    return counts


async def pg_status(api: ApiClient, name: str) -> dict[str, Any]:
    pg = await custom_api(api).get_namespaced_custom_object(*SCHED, "default", "podgroups", name)
    status: dict[str, Any] = pg.get("status", {})
    return status


def podgroup_phases(
    cluster: SimulatedCluster, first_status: dict[str, dict[str, Any]] | None = None
) -> list[str]:
    """The phases PodGroups go through from now on, each change once; `first_status`
    gets the status each phase was first written with, as it was written (a phase that
    lasts a moment, Running before the pods' short sleeps end, can pass between polls)."""
    phases: list[str] = []

    def follow(change: Change) -> None:
        if change.resource is registry.PODGROUP and change.type != "DELETED":
            status = change.entry.obj.get("status", {})
            phase = status.get("phase", "")
            if phase and phases[-1:] != [phase]:
                phases.append(phase)
                if first_status is not None:
                    first_status.setdefault(phase, copy.deepcopy(status))

    cluster.store.subscribe(follow)
    return phases


#: two nodes of two GPUs: two 4-GPU gang jobs fit only one after the other
FOUR_GPUS = pytest.mark.cluster(nodes=2, node_capacity={"nvidia.com/gpu": "2"}, time_scale=50)
#: one node of two GPUs
TWO_GPUS = pytest.mark.cluster(nodes=1, node_capacity={"nvidia.com/gpu": "2"}, time_scale=50)


@FOUR_GPUS
async def test_one_by_one_scheduling_deadlocks_two_gang_jobs(kube_api: ApiClient) -> None:
    forever = ["sh", "-c", "sleep infinity"]  # each worker waits for all its peers
    await submit_interleaved(kube_api, {"a": forever, "b": forever}, gang=False)

    async def half_and_half() -> bool:
        return await bound_per_job(kube_api) == {"a": 2, "b": 2}

    await eventually(half_and_half)
    await asyncio.sleep(0.3)
    assert await bound_per_job(kube_api) == {"a": 2, "b": 2}  # and neither job can ever start
    pending = await core_api(kube_api).list_namespaced_pod(
        "default", field_selector="spec.nodeName="
    )
    assert len(pending.items) == 4
    condition = next(c for c in pending.items[0].status.conditions if c.type == "PodScheduled")
    assert condition.status == "False" and condition.reason == "Unschedulable"
    assert "Insufficient nvidia.com/gpu" in condition.message


def scheduling_history(cluster: SimulatedCluster) -> list[tuple[str, dict[str, Any]]]:
    """From now on, in the order the store writes them: each pod's binding ("bind", the
    pod) and every PodGroup status ("podgroup", the PodGroup). States that last a moment
    (a gang waiting while the other runs) are read back from here, not polled for."""
    history: list[tuple[str, dict[str, Any]]] = []

    def binds(old: dict[str, Any], new: dict[str, Any]) -> bool:
        return bool(new["spec"].get("nodeName")) and not old.get("spec", {}).get("nodeName")

    def follow(change: Change) -> None:
        obj, old = change.entry.obj, change.old or {}
        if change.type == "DELETED":
            return
        if change.resource is registry.PODGROUP:
            history.append(("podgroup", obj))
        elif change.resource is registry.POD and binds(old, obj):
            history.append(("bind", obj))

    cluster.store.subscribe(follow)
    return history


@FOUR_GPUS
async def test_gang_scheduling_runs_one_job_whole_then_the_other(
    sim_cluster: SimulatedCluster, kube_api: ApiClient
) -> None:
    history = scheduling_history(sim_cluster)
    # the first job runs 50 of the scheduler's 1 s sessions, so sessions see the second
    # waiting (with all its pods) even when the process is starved for a while
    work = ["sh", "-c", "sleep 50"]
    await submit_interleaved(kube_api, {"a": work, "b": work}, gang=True)

    def bound_jobs() -> list[str]:
        return [obj["metadata"]["labels"]["job"] for kind, obj in history if kind == "bind"]

    def statuses(job: str) -> list[dict[str, Any]]:
        return [
            obj.get("status", {})
            for kind, obj in history
            if kind == "podgroup" and obj["metadata"]["name"] == job
        ]

    async def both_bound() -> bool:
        return len(bound_jobs()) == 8

    await eventually(both_bound, within=15)
    first, second = bound_jobs()[0], bound_jobs()[-1]
    assert bound_jobs() == [first] * 4 + [second] * 4  # one job whole, then the other
    # the gang plugin's condition says the gang waits (once all its pods exist); the
    # overcommit plugin's Event says why
    waits = (
        "4/4 tasks in gang unschedulable: pod group is not ready, 4 Pending, 4 minAvailable; "
        "Pending: 4 Unschedulable"
    )
    assert any(
        status.get("phase") == "Pending"
        and ("Unschedulable", "True", waits)
        in [(c["type"], c["status"], c.get("message")) for c in status.get("conditions") or ()]
        for status in statuses(second)
    )
    assert "resource in cluster is overused: overused nvidia.com/gpu" in await event_messages(
        kube_api, "PodGroup", second, "Unschedulable"
    )
    assert any(status.get("phase") == "Running" for status in statuses(first))

    def position(job: str, done: Callable[[dict[str, Any]], bool]) -> int:
        return next(
            i
            for i, (kind, obj) in enumerate(history)
            if kind == "podgroup" and obj["metadata"]["name"] == job and done(obj.get("status", {}))
        )

    async def second_running() -> bool:
        return any(status.get("phase") == "Running" for status in statuses(second))

    await eventually(second_running)
    first_finished = position(first, lambda status: status.get("succeeded") == 4)
    assert first_finished < position(second, lambda status: status.get("phase") == "Running")


@FOUR_GPUS
async def test_enqueue_admits_a_gang_before_its_pods_and_it_keeps_its_reservation(
    kube_api: ApiClient,
) -> None:
    """Volcano's enqueue looks at minResources, not at pods: `a`, one of its four pods
    created, is admitted first and holds the 4 GPUs; `b` waits Pending, refused by the
    overcommit plugin, and its four pods are not placed on what `a` holds; `a`'s are,
    once all there."""
    core, custom = core_api(kube_api), custom_api(kube_api)
    forever = ["sh", "-c", "sleep infinity"]
    await core.create_namespaced_pod("default", worker("a", 0, forever, gang=True))
    for job in ("a", "b"):
        await custom.create_namespaced_custom_object(
            *SCHED, "default", "podgroups", podgroup(job, 4, gpus=4)
        )

    async def b_refused() -> bool:
        said = await event_messages(kube_api, "PodGroup", "b", "Unschedulable")
        return "resource in cluster is overused: overused nvidia.com/gpu" in said

    await eventually(b_refused)
    assert (await pg_status(kube_api, "a"))["phase"] == "Inqueue"
    for i in range(4):
        await core.create_namespaced_pod("default", worker("b", i, forever, gang=True))
    await asyncio.sleep(0.3)  # several sessions
    assert await bound_per_job(kube_api) == {}
    assert (await pg_status(kube_api, "b"))["phase"] == "Pending"
    for i in range(1, 4):
        await core.create_namespaced_pod("default", worker("a", i, forever, gang=True))

    async def a_whole() -> bool:
        return await bound_per_job(kube_api) == {"a": 4}

    await eventually(a_whole)


@FOUR_GPUS
async def test_incomplete_gang_waits_for_its_members_and_its_podgroup(kube_api: ApiClient) -> None:
    core = core_api(kube_api)
    for i in range(2):
        await core.create_namespaced_pod("default", worker("g", i, ["sleep", "5"], gang=True))
    await asyncio.sleep(0.2)
    assert await bound_per_job(kube_api) == {}  # no PodGroup yet
    await custom_api(kube_api).create_namespaced_custom_object(
        *SCHED, "default", "podgroups", podgroup("g", 3)
    )
    await asyncio.sleep(0.2)
    assert await bound_per_job(kube_api) == {}  # 2 of 3 members exist
    await core.create_namespaced_pod("default", worker("g", 2, ["sleep", "5"], gang=True))

    async def bound() -> bool:
        return await bound_per_job(kube_api) == {"g": 3}

    await eventually(bound)


@FOUR_GPUS
async def test_a_member_left_to_another_scheduler_is_no_task_of_the_gang(
    kube_api: ApiClient,
) -> None:
    """vc-scheduler's cache holds only its own pods until another scheduler places them
    (`responsibleForPod`): a PodGroup member naming a scheduler the cluster lacks waits,
    unplaced, while the gang runs without it, and the scheduler goes on."""
    core = core_api(kube_api)
    forever = ["sleep", "infinity"]
    await custom_api(kube_api).create_namespaced_custom_object(
        *SCHED, "default", "podgroups", podgroup("mixed", 1)
    )
    elsewhere = worker("mixed", 0, forever, gang=True)
    elsewhere["spec"]["schedulerName"] = "elsewhere"
    await core.create_namespaced_pod("default", elsewhere)
    await core.create_namespaced_pod("default", worker("mixed", 1, forever, gang=True))

    async def ours_bound() -> bool:
        return await bound_per_job(kube_api) == {"mixed": 1}

    await eventually(ours_bound)
    pod = await core.read_namespaced_pod("mixed-worker-0", "default")
    assert pod.spec.node_name is None
    await custom_api(kube_api).create_namespaced_custom_object(
        *SCHED, "default", "podgroups", podgroup("after", 1)
    )
    await core.create_namespaced_pod("default", worker("after", 0, forever, gang=True))

    async def after_bound() -> bool:
        return (await bound_per_job(kube_api)).get("after") == 1

    await eventually(after_bound)


@FOUR_GPUS
async def test_queue_capability_holds_a_gang_pending(kube_api: ApiClient) -> None:
    custom = custom_api(kube_api)
    await custom.create_cluster_custom_object(
        *SCHED,
        "queues",
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "Queue",
            "metadata": {"name": "small"},
            "spec": {"capability": {"nvidia.com/gpu": "2"}},
        },
    )
    await custom.create_namespaced_custom_object(
        *SCHED, "default", "podgroups", podgroup("q", 3, "small", gpus=3)
    )
    for i in range(3):
        await core_api(kube_api).create_namespaced_pod(
            "default", worker("q", i, ["sleep", "5"], gang=True)
        )

    async def held() -> bool:
        said = await event_messages(kube_api, "PodGroup", "q", "Unschedulable")
        return "queue resource quota insufficient: insufficient nvidia.com/gpu" in said

    await eventually(held)
    assert (await pg_status(kube_api, "q"))["phase"] == "Pending"
    assert await bound_per_job(kube_api) == {}


@TWO_GPUS
async def test_gang_that_loses_a_member_it_cannot_replace_is_unknown(kube_api: ApiClient) -> None:
    core = core_api(kube_api)
    forever = ["sleep", "infinity"]
    await custom_api(kube_api).create_namespaced_custom_object(
        *SCHED, "default", "podgroups", podgroup("u", 2)
    )
    for i in range(2):
        await core.create_namespaced_pod("default", worker("u", i, forever, gang=True))

    async def running() -> bool:
        return (await pg_status(kube_api, "u")).get("phase") == "Running"

    await eventually(running)
    await core.create_namespaced_pod("default", worker("other", 0, forever, gang=False))
    await core.delete_namespaced_pod("u-worker-0", "default", grace_period_seconds=0)

    async def other_took_the_gpu() -> bool:
        return (await bound_per_job(kube_api)).get("other") == 1

    await eventually(other_took_the_gpu)
    await core.create_namespaced_pod("default", worker("u", 0, forever, gang=True))

    async def unknown() -> bool:
        status = await pg_status(kube_api, "u")
        return status.get("phase") == "Unknown" and any(
            c["type"] == "Unschedulable" and c["status"] == "True"
            for c in status.get("conditions", [])
        )

    await eventually(unknown)


@TWO_GPUS
async def test_gang_that_loses_every_member_is_pending_again(
    sim_cluster: SimulatedCluster, kube_api: ApiClient
) -> None:
    """Volcano's `jobStatus`: a gang with nothing placed (and not Inqueue) is Pending, so it
    must be admitted again (Inqueue); queue_job_status.go "Transform from running to
    pending"."""
    phases = podgroup_phases(sim_cluster)
    core = core_api(kube_api)
    forever = ["sleep", "infinity"]
    await custom_api(kube_api).create_namespaced_custom_object(
        *SCHED, "default", "podgroups", podgroup("p", 2)
    )
    for i in range(2):
        await core.create_namespaced_pod("default", worker("p", i, forever, gang=True))

    async def phase_is(phase: str) -> bool:
        return (await pg_status(kube_api, "p")).get("phase") == phase

    await eventually(lambda: phase_is("Running"))
    for i in range(2):
        await core.delete_namespaced_pod(f"p-worker-{i}", "default", grace_period_seconds=0)

    await eventually(lambda: phase_is("Inqueue"))
    # a scheduling cycle between the two deletes sees one member left: Unknown
    between = phases[3:-2]
    assert phases[:3] + phases[-2:] == ["Pending", "Inqueue", "Running", "Pending", "Inqueue"]
    assert between in ([], ["Unknown"]), phases


@TWO_GPUS
async def test_quota_names_in_min_resources_ask_no_node_for_them(kube_api: ApiClient) -> None:
    """Volcano's controller repeats minResources under ResourceQuota names (`count/pods`,
    `requests.<r>`); no node has those, so admitting a gang whose pods already wait must
    not ask for them (as admitting one before its pods does not)."""
    core = core_api(kube_api)
    for i in range(2):  # running until the test ends: a poll cannot miss Running
        forever = worker("q", i, ["sleep", "infinity"], gang=True)
        await core.create_namespaced_pod("default", forever)
    group = podgroup("q", 2, gpus=2)
    group["spec"]["minResources"].update({"requests.nvidia.com/gpu": "2", "count/pods": "2"})
    await custom_api(kube_api).create_namespaced_custom_object(
        *SCHED, "default", "podgroups", group
    )

    async def running() -> bool:
        return (await pg_status(kube_api, "q")).get("phase") == "Running"

    await eventually(running)


async def test_binding_subresource_assigns_a_node_once(kube_api: ApiClient) -> None:
    core = core_api(kube_api)
    await core.create_namespaced_pod(
        "default",
        {
            "metadata": {"name": "manual"},
            "spec": {"schedulerName": "mine", "containers": [{"name": "c", "image": "x"}]},
        },
    )
    binding = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "manual"},
        "target": {"apiVersion": "v1", "kind": "Node", "name": "node-2"},
    }
    first = await core.create_namespaced_pod_binding(
        "manual", "default", binding, _preload_content=False
    )
    assert first.status == 201
    got = await core.read_namespaced_pod("manual", "default")
    assert got.spec.node_name == "node-2"
    again = await core.create_namespaced_pod_binding(
        "manual", "default", binding, _preload_content=False
    )
    assert again.status == 409


@pytest.mark.cluster(nodes=1, node_capacity={"nvidia.com/gpu": "4"})
async def test_a_podgroup_without_pods_is_enqueued_only_when_its_min_resources_fit(
    sim_cluster: SimulatedCluster,
) -> None:
    """Volcano's enqueue: the first 4-GPU gang is admitted before its pods exist and
    holds its GPUs; the second waits Pending with the reason, and nothing deadlocks."""
    for name in ("first", "second"):
        sim_cluster.objects.create(
            registry.PODGROUP,
            "default",
            {
                "metadata": {"name": name},
                "spec": {
                    "minMember": 4,
                    "minResources": {
                        "nvidia.com/gpu": "4",
                        "requests.nvidia.com/gpu": "4",
                        "count/pods": "4",
                    },
                },
            },
        )

    async def phases() -> dict[str, str]:
        return {
            name: (sim_cluster.objects.find(registry.PODGROUP, "default", name) or {})
            .get("status", {})
            .get("phase", "")
            for name in ("first", "second")
        }

    async def settled() -> bool:
        return (await phases()) == {"first": "Inqueue", "second": "Pending"}

    await eventually(settled)
    second = sim_cluster.objects.find(registry.PODGROUP, "default", "second") or {}
    assert "conditions" not in second["status"]  # the gang plugin skips a gang without pods
    refusals = [
        e.obj["message"]
        for e in sim_cluster.objects.list(registry.EVENT, "default", Selector()).items
        if e.obj["involvedObject"]["name"] == "second" and e.obj["type"] == "Normal"
    ]
    assert refusals == ["resource in cluster is overused: overused nvidia.com/gpu"]

    sim_cluster.objects.delete(registry.PODGROUP, "default", "first")

    async def second_admitted() -> bool:
        return (await phases())["second"] == "Inqueue"

    await eventually(second_admitted)


@FOUR_GPUS
async def test_scheduled_is_added_beside_unschedulable_and_the_gang_completes(
    sim_cluster: SimulatedCluster, kube_api: ApiClient
) -> None:
    """vc-scheduler's gang plugin sets Scheduled=True once the gang is ready and leaves
    the Unschedulable=True of an earlier session as it was; each carries the time and
    transitionID of the session that set it, sessions at least a second apart, so the
    newest True condition is Scheduled. Pending -> Inqueue -> Running -> Completed."""
    first_status: dict[str, dict[str, Any]] = {}
    phases = podgroup_phases(sim_cluster, first_status)
    core = core_api(kube_api)
    await custom_api(kube_api).create_namespaced_custom_object(
        *SCHED, "default", "podgroups", podgroup("g", 2)
    )
    await core.create_namespaced_pod("default", worker("g", 0, ["sleep", "5"], gang=True))

    async def waiting() -> bool:
        conditions = (await pg_status(kube_api, "g")).get("conditions") or []
        return any(c["type"] == "Unschedulable" for c in conditions)

    await eventually(waiting)
    (before,) = (await pg_status(kube_api, "g"))["conditions"]
    assert before == {
        "type": "Unschedulable",
        "status": "True",
        "reason": "NotEnoughResources",
        "message": "2/1 tasks in gang unschedulable: pod group is not ready, 1 Pending, "
        "2 minAvailable; Pending: 1 Unschedulable",
        "lastTransitionTime": before["lastTransitionTime"],
        "transitionID": before["transitionID"],
    }
    await core.create_namespaced_pod("default", worker("g", 1, ["sleep", "5"], gang=True))

    async def ran() -> bool:  # Running lasts the pods' 0.1 s sleep: seen as written
        return "Running" in first_status

    await eventually(ran)
    status = first_status["Running"]
    unschedulable, scheduled = status["conditions"]
    assert unschedulable == before  # left in place, untouched
    assert scheduled["type"] == "Scheduled" and scheduled["status"] == "True"
    assert scheduled["reason"] == "tasks in gang are ready to be scheduled"
    assert "message" not in scheduled
    assert scheduled["transitionID"] != before["transitionID"]
    assert scheduled["lastTransitionTime"] > before["lastTransitionTime"]
    # Running once both pods are allocated (vc-scheduler's jobStatus), started by their
    # kubelets or not: its `running` counts those started when the session looked, 0 to 2
    # under load. Both are bound, though.
    for index in range(2):
        pod = sim_cluster.objects.find(registry.POD, "default", f"g-worker-{index}")
        assert pod is not None and pod["spec"].get("nodeName")

    async def completed() -> bool:
        return (await pg_status(kube_api, "g")).get("phase") == "Completed"

    await eventually(completed)
    assert (await pg_status(kube_api, "g"))["succeeded"] == 2
    assert phases == ["Pending", "Inqueue", "Running", "Completed"]


@pytest.mark.cluster(nodes=1, time_scale=0.001)  # simulated time moves when the test says
async def test_sessions_are_a_schedule_period_apart(sim_cluster: SimulatedCluster) -> None:
    """vc-scheduler runs a session at most once per second of simulated time: what
    makes `lastTransitionTime`, in whole seconds, order the conditions of successive
    sessions, as on a real cluster. PodGroups created faster than that are admitted
    together in the next session, as soon as it is due."""
    scheduler, clock = sim_cluster.scheduler, sim_cluster.clock
    admitted: dict[str, float] = {}  # PodGroup -> when the session that admitted it began

    def follow(change: Change) -> None:
        inqueue = change.entry.obj.get("status", {}).get("phase") == "Inqueue"
        if change.resource is registry.PODGROUP and change.type == "MODIFIED" and inqueue:
            admitted[change.entry.obj["metadata"]["name"]] = scheduler.last_session

    def create(name: str) -> None:
        sim_cluster.objects.create(
            registry.PODGROUP, "default", {"metadata": {"name": name}, "spec": {"minMember": 1}}
        )

    async def have_been_admitted(*names: str) -> None:
        async def admitted_all() -> bool:
            return all(name in admitted for name in names)

        await eventually(admitted_all)

    async def scheduled_since(name: str) -> None:
        """Wait for a scheduling cycle that saw PodGroup `name`: kube-scheduler's pods are
        bound in the cycle, so a pod created with it is bound once that cycle ran."""
        probe = f"{name}-probe"
        sim_cluster.objects.create(registry.POD, "default", running_pod(probe, ["sleep", "3600"]))

        async def bound() -> bool:
            pod = sim_cluster.objects.find(registry.POD, "default", probe)
            return bool((pod or {}).get("spec", {}).get("nodeName"))

        await eventually(bound)

    sim_cluster.store.subscribe(follow)
    create("p0")
    await have_been_admitted("p0")
    later = [f"p{i}" for i in range(1, 6)]
    for name in later:  # 0.75 s within the period the session of p0 began
        create(name)
        await scheduled_since(name)
        clock.advance(0.15)
    clock.advance(scheduler.schedule_period - 0.75)
    await have_been_admitted(*later)

    [second] = {admitted[name] for name in later}  # one session for all
    gap = second - admitted["p0"]
    assert scheduler.schedule_period <= gap < scheduler.schedule_period + 0.1, admitted


def _gang(min_member: int, *statuses: TaskStatus, node: str = "node-1") -> Gang:
    tasks = [Task("ns", f"t{i}", s, node=node) for i, s in enumerate(statuses)]
    return Gang(min_member=min_member, tasks=tasks)


R, P, F, S, X = (
    TaskStatus.RUNNING,
    TaskStatus.PENDING,
    TaskStatus.FAILED,
    TaskStatus.SUCCEEDED,
    TaskStatus.RELEASING,
)


@pytest.mark.parametrize(
    ("gang", "current", "condition", "phase"),
    [
        pytest.param(_gang(2, R, R), "Inqueue", "Scheduled", "Running", id="running"),
        pytest.param(_gang(2, R, P), "Running", "Unschedulable", "Unknown", id="member-waits"),
        pytest.param(_gang(2, R, F), "Running", "Unschedulable", "Unknown", id="member-failed"),
        pytest.param(_gang(2, S, F), "Running", "Unschedulable", "Completed", id="all-ended"),
        pytest.param(_gang(2, S, S), "Running", "Scheduled", "Completed", id="succeeded"),
        pytest.param(_gang(2, R, X), "Running", None, "Running", id="member-terminating"),
        pytest.param(_gang(2, P, P), "Inqueue", "Unschedulable", "Inqueue", id="admitted"),
        pytest.param(_gang(2, P), "Running", "Unschedulable", "Pending", id="lost-all-but-one"),
        pytest.param(_gang(2), "Running", None, "Pending", id="lost-every-member"),
    ],
)
def test_gang_condition_and_phase_follow_volcano(
    gang: Gang, current: str, condition: str | None, phase: str
) -> None:
    """The gang plugin's condition and `getPodGroupPhase` for one session."""
    found = gang.condition()
    assert (found[0] if found else None) == condition
    assert gang.phase(current, unschedulable=condition == "Unschedulable") == phase


def test_fit_error_sorts_its_histograms_as_strings() -> None:
    gang = _gang(12, *([P] * 10), R, R)
    gang.tasks[0].fit_error = "0/3 nodes are unavailable: 3 Insufficient cpu."
    gang.tasks[1].allocated_to = "node-2"
    assert gang.fit_error() == (
        "pod group is not ready, 10 Pending, 12 minAvailable, 2 Running; "
        "Pending: 1 Schedulable, 9 Unschedulable. "
        "Origin reason is t0: 0/3 nodes are unavailable: 3 Insufficient cpu."
    )


def _with_init(name: str, *, sidecar: bool) -> dict[str, Any]:
    """One container asking 1 cpu beside an init container asking 1.5: a sidecar
    (`restartPolicy: Always`) keeps running, so the pod needs 2.5; an ordinary init
    container runs alone first, so it needs 1.5."""
    init: dict[str, Any] = {
        "name": "init",
        "image": "x",
        "resources": {"requests": {"cpu": "1500m"}},
    }
    if sidecar:
        init["restartPolicy"] = "Always"
    return {
        "metadata": {"name": name},
        "spec": {
            "restartPolicy": "Never",
            "initContainers": [init],
            "containers": [{"name": "main", "image": "x", "resources": {"requests": {"cpu": "1"}}}],
        },
    }


@pytest.mark.cluster(nodes=1, node_capacity={"cpu": "2"}, time_scale=50)
async def test_a_sidecar_counts_beside_the_containers_an_init_container_before_them(
    kube_api: ApiClient,
) -> None:
    core = core_api(kube_api)
    await core.create_namespaced_pod("default", _with_init("sidecar", sidecar=True))
    await core.create_namespaced_pod("default", _with_init("init", sidecar=False))

    async def init_bound() -> bool:
        pod = await core.read_namespaced_pod("init", "default")
        return bool(pod.spec.node_name)

    async def sidecar_refused() -> bool:
        messages = await event_messages(kube_api, "Pod", "sidecar", "FailedScheduling")
        return any("Insufficient cpu" in m for m in messages)

    await eventually(init_bound)
    await eventually(sidecar_refused)
    assert not (await core.read_namespaced_pod("sidecar", "default")).spec.node_name
