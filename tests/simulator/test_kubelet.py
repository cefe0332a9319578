"""The kubelet: pod status as a real one reports it, restarts, grace periods, node loss,
eviction and logs."""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Any

from kubernetes_asyncio.client import ApiClient
from kubernetes_asyncio.client.exceptions import ApiException

from lavalog.simulator import registry
from lavalog.simulator.server import SimulatedCluster
from tests.simulator.kube import core_api, eventually, pod, running_pod


async def wait_phase(api: ApiClient, name: str, *phases: str) -> Any:
    core = core_api(api)
    found: list[Any] = []

    async def reached() -> bool:
        got = await core.read_namespaced_pod(name, "default")
        found[:] = [got]
        return bool(got.status.phase in phases)

    await eventually(reached)
    return found[0]


def seconds_between(a: datetime, b: datetime) -> float:
    return (b - a).total_seconds()


async def test_failing_container_reports_exit_code_timestamps_and_conditions(
    kube_api: ApiClient,
) -> None:
    core = core_api(kube_api)
    await core.create_namespaced_pod(
        "default",
        running_pod("fail", ["sh", "-c", "echo starting; sleep 30; exit 3"], restartPolicy="Never"),
    )
    running = await wait_phase(kube_api, "fail", "Running")
    assert running.status.container_statuses[0].state.running.started_at
    assert running.status.pod_ip and running.status.host_ip and running.status.start_time
    # a v1.30 kubelet's conditions, in the order it writes them
    assert [(c.type, c.status) for c in running.status.conditions] == [
        ("PodReadyToStartContainers", "True"),
        ("Initialized", "True"),
        ("Ready", "True"),
        ("ContainersReady", "True"),
        ("PodScheduled", "True"),
    ]
    failed = await wait_phase(kube_api, "fail", "Failed")
    terminated = failed.status.container_statuses[0].state.terminated
    assert (terminated.exit_code, terminated.reason) == (3, "Error")
    # whole simulated seconds; a busy machine's stalls only add (50 simulated s per real s)
    assert 29 <= seconds_between(terminated.started_at, terminated.finished_at) <= 45
    conditions = {c.type: c for c in failed.status.conditions}
    assert (conditions["Ready"].status, conditions["Ready"].reason) == ("False", "PodFailed")
    assert conditions["PodReadyToStartContainers"].status == "False"  # the sandbox is gone
    assert await core.read_namespaced_pod_log("fail", "default") == "starting\n"


async def test_a_command_that_does_not_exist_fails_with_127(kube_api: ApiClient) -> None:
    """A misspelt program fails the pod, as `sh` would, instead of running for a while."""
    await core_api(kube_api).create_namespaced_pod(
        "default", running_pod("typo", ["sh", "-c", "pyhton train.py"], restartPolicy="Never")
    )
    failed = await wait_phase(kube_api, "typo", "Failed")
    terminated = failed.status.container_statuses[0].state.terminated
    assert (terminated.exit_code, terminated.reason) == (127, "Error")
    log = await core_api(kube_api).read_namespaced_pod_log("typo", "default")
    assert log == "sh: pyhton: not found\n"


async def test_successful_container_completes(kube_api: ApiClient) -> None:
    await core_api(kube_api).create_namespaced_pod(
        "default", running_pod("ok", ["true"], restartPolicy="OnFailure")
    )
    done = await wait_phase(kube_api, "ok", "Succeeded")
    terminated = done.status.container_statuses[0].state.terminated
    assert (terminated.exit_code, terminated.reason) == (0, "Completed")
    assert done.status.container_statuses[0].restart_count == 0


async def test_on_failure_restarts_in_place(kube_api: ApiClient) -> None:
    core = core_api(kube_api)
    await core.create_namespaced_pod(
        "default", running_pod("flaky", ["sh", "-c", "exit 2"], restartPolicy="OnFailure")
    )

    async def restarted() -> bool:
        got = await core.read_namespaced_pod("flaky", "default")
        statuses = got.status.container_statuses or []
        return bool(statuses and statuses[0].restart_count >= 2 and got.status.phase == "Running")

    await eventually(restarted)
    got = await core.read_namespaced_pod("flaky", "default")
    status = got.status.container_statuses[0]
    assert status.last_state.terminated.exit_code == 2
    assert status.state.waiting.reason == "CrashLoopBackOff" or status.state.running


async def test_init_container_failure_fails_the_pod(kube_api: ApiClient) -> None:
    pod = running_pod("init", ["sleep", "1"], restartPolicy="Never")
    pod["spec"]["initContainers"] = [{"name": "setup", "image": "x", "command": ["false"]}]
    await core_api(kube_api).create_namespaced_pod("default", pod)
    failed = await wait_phase(kube_api, "init", "Failed")
    assert failed.status.init_container_statuses[0].state.terminated.exit_code == 1
    assert failed.status.container_statuses[0].state.waiting.reason == "PodInitializing"


async def test_multi_container_pod_fails_if_any_container_fails(kube_api: ApiClient) -> None:
    pod = running_pod("multi", ["sleep", "2"], restartPolicy="Never")
    pod["spec"]["containers"].append(
        {"name": "side", "image": "x", "command": ["sh", "-c", "sleep 1; exit 5"]}
    )
    await core_api(kube_api).create_namespaced_pod("default", pod)
    failed = await wait_phase(kube_api, "multi", "Failed")
    codes = {s.name: s.state.terminated.exit_code for s in failed.status.container_statuses}
    assert codes == {"main": 0, "side": 5}


async def test_deletion_honours_the_grace_period(
    sim_cluster: SimulatedCluster, kube_api: ApiClient
) -> None:
    core = core_api(kube_api)
    await core.create_namespaced_pod(
        "default", running_pod("slow", ["sleep", "3600"], terminationGracePeriodSeconds=30)
    )
    await wait_phase(kube_api, "slow", "Running")
    loop = asyncio.get_running_loop()
    started = loop.time()
    await core.delete_namespaced_pod("slow", "default")
    terminating = await core.read_namespaced_pod("slow", "default")
    assert (
        terminating.metadata.deletion_timestamp
        and terminating.metadata.deletion_grace_period_seconds == 30
    )

    async def gone() -> bool:
        try:
            await core.read_namespaced_pod("slow", "default")
        except ApiException as exc:
            return exc.status == 404
        return False

    await eventually(gone)
    elapsed_sim = (loop.time() - started) * sim_cluster.clock.time_scale
    assert 29 <= elapsed_sim <= 120


async def test_short_grace_kills_with_137_and_clock_advance_cuts_waiting(
    sim_cluster: SimulatedCluster, kube_api: ApiClient
) -> None:
    core = core_api(kube_api)
    await core.create_namespaced_pod(
        "default", running_pod("k", ["sleep", "3600"], restartPolicy="Never")
    )
    await wait_phase(kube_api, "k", "Running")
    store = sim_cluster.store
    since = store.rv
    await core.delete_namespaced_pod("k", "default", grace_period_seconds=1000)
    sim_cluster.admin.advance(1000)

    async def gone() -> bool:
        return store.get(registry.POD, ("default", "k")) is None

    await eventually(gone)
    last_states = [
        c.entry.obj["status"].get("containerStatuses", [{}])[0].get("state", {})
        for c in store.changes_since(since)
        if c.resource.plural == "pods"
    ]
    assert last_states[-1]["terminated"]["exitCode"] == 137


async def test_eviction_subresource_deletes_gracefully(kube_api: ApiClient) -> None:
    core = core_api(kube_api)
    await core.create_namespaced_pod(
        "default", running_pod("ev", ["sleep", "3600"], terminationGracePeriodSeconds=1)
    )
    await wait_phase(kube_api, "ev", "Running")
    eviction = {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": "ev", "namespace": "default"},
    }
    response = await core.create_namespaced_pod_eviction(
        "ev", "default", eviction, _preload_content=False
    )
    assert response.status == 201

    async def gone() -> bool:
        return "ev" not in {
            p.metadata.name for p in (await core.list_namespaced_pod("default")).items
        }

    await eventually(gone)


async def test_node_loss_fails_its_pods_with_node_lost(
    sim_cluster: SimulatedCluster, kube_api: ApiClient
) -> None:
    core = core_api(kube_api)
    await core.create_namespaced_pod(
        "default", running_pod("victim", ["sleep", "3600"], nodeName="node-1")
    )
    await wait_phase(kube_api, "victim", "Running")
    sim_cluster.admin.lose_node("node-1")
    lost = await core.read_namespaced_pod("victim", "default")
    assert (lost.status.phase, lost.status.reason) == ("Failed", "NodeLost")
    node = await core.read_node("node-1")
    ready = next(c for c in node.status.conditions if c.type == "Ready")
    assert ready.status == "Unknown" and node.spec.taints[0].key == "node.kubernetes.io/unreachable"
    for i in range(3):
        await core.create_namespaced_pod("default", running_pod(f"new-{i}", ["sleep", "60"]))
    for i in range(3):
        placed = await wait_phase(kube_api, f"new-{i}", "Running")
        assert placed.spec.node_name == "node-2"
    sim_cluster.admin.restore_node("node-1")
    node = await core.read_node("node-1")
    assert next(c for c in node.status.conditions if c.type == "Ready").status == "True"


async def test_a_crash_while_running_wins_over_an_exit_in_the_same_turn(
    sim_cluster: SimulatedCluster, kube_api: ApiClient
) -> None:
    """A crash delivered while the status still says running ends the container with
    the crash's code, even when its program's own end comes due in the same turn of the
    event loop (on a busy machine, a late wake-up makes both due at once)."""
    core = core_api(kube_api)
    await core.create_namespaced_pod(
        "default", running_pod("hit", ["sh", "-c", "sleep 1000"], restartPolicy="Never")
    )
    await wait_phase(kube_api, "hit", "Running")

    sim_cluster.admin.advance(1000)  # the program's end is due ...
    sim_cluster.admin.crash("default", "hit", 143)  # ... and so is the crash

    failed = await wait_phase(kube_api, "hit", "Failed", "Succeeded")
    terminated = failed.status.container_statuses[0].state.terminated
    assert (failed.status.phase, terminated.exit_code) == ("Failed", 143)


async def test_the_oom_killer_ends_one_container_and_its_log_tail_is_its_last_words(
    sim_cluster: SimulatedCluster, kube_api: ApiClient
) -> None:
    """A sidecar beside a trainer the OOM killer ends: the trainer is OOMKilled (137) with
    the tail of its log for a message (FallbackToLogsOnError), the pod runs on until the
    sidecar exits 0, and the statuses are sorted by name, as the kubelet sorts them."""
    core = core_api(kube_api)
    containers = [
        {
            "name": "trainer",
            "image": "trainer",
            "command": ["sh", "-c", "echo loading shard 7; sleep 1000"],
            "terminationMessagePolicy": "FallbackToLogsOnError",
        },
        # runs until the test ends its sleep (`advance`): at 50x a `sleep 40` (0.8 s of wall
        # time) could end before the OOM kill on a busy machine, and the pod be Failed
        {"name": "agent", "image": "agent", "command": ["sleep", "1000"]},
    ]
    await core.create_namespaced_pod(
        "default",
        pod("oom", schedulerName="default-scheduler", restartPolicy="Never", containers=containers),
    )
    running = await wait_phase(kube_api, "oom", "Running")
    assert [s.name for s in running.status.container_statuses] == ["agent", "trainer"]

    async def trainer_running() -> bool:
        got = await core.read_namespaced_pod("oom", "default")
        return any(
            s.name == "trainer" and s.state.running for s in got.status.container_statuses or []
        )

    await eventually(trainer_running)
    sim_cluster.admin.oom_kill("default", "oom", "trainer")

    async def trainer_ended() -> bool:
        got = await core.read_namespaced_pod("oom", "default")
        return bool(got.status.container_statuses[1].state.terminated)

    await eventually(trainer_ended)
    got = await core.read_namespaced_pod("oom", "default")
    assert got.status.phase == "Running"  # the sidecar runs on
    trainer = got.status.container_statuses[1].state.terminated
    assert (trainer.exit_code, trainer.reason, trainer.message) == (
        137,
        "OOMKilled",
        "loading shard 7\n",
    )
    sim_cluster.admin.advance(1000)  # the sidecar's sleep ends: exit 0
    failed = await wait_phase(kube_api, "oom", "Failed")
    agent = failed.status.container_statuses[0].state.terminated
    assert (agent.exit_code, agent.reason, agent.message) == (0, "Completed", None)

    assert await core.read_namespaced_pod_log("oom", "default", container="trainer") == (
        "loading shard 7\n"
    )
    try:
        await core.read_namespaced_pod_log("oom", "default")
    except ApiException as exc:
        assert exc.status == 400
        assert "a container name must be specified for pod oom, choose one of: [trainer agent]" in (
            str(exc.body)
        )
    else:
        raise AssertionError("a two-container pod's log needs a container name")


async def test_a_container_leaves_its_termination_message_in_its_file(
    kube_api: ApiClient,
) -> None:
    script = "echo shard 7 is corrupt > /dev/termination-log; echo done; exit 3"
    await core_api(kube_api).create_namespaced_pod(
        "default", running_pod("said", ["sh", "-c", script], restartPolicy="Never")
    )
    failed = await wait_phase(kube_api, "said", "Failed")
    terminated = failed.status.container_statuses[0].state.terminated
    assert (terminated.exit_code, terminated.message) == (3, "shard 7 is corrupt\n")
    spec = failed.spec.containers[0]
    assert (spec.termination_message_path, spec.termination_message_policy) == (
        "/dev/termination-log",
        "File",
    )
