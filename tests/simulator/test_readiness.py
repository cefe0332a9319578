"""Container readiness as the kubelet reports it: `ready` and `started` per container,
the Initialized / Ready / ContainersReady conditions with Kubernetes' reasons and
messages, probes honoured in simulated time, init containers and their restarts."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import datetime
from types import SimpleNamespace
from typing import Any

import pytest
from kubernetes_asyncio import watch
from kubernetes_asyncio.client import ApiClient

from lavalog.simulator import pod_status
from lavalog.simulator.probes import Probe, ProbeKind, Verdict
from tests.simulator.kube import core_api, eventually, running_pod


def probed(name: str, command: list[str], **probes: dict[str, Any]) -> dict[str, Any]:
    """A long-running pod whose container `main` has the given probes."""
    pod = running_pod(name, command, restartPolicy="Always", terminationGracePeriodSeconds=0)
    pod["spec"]["containers"][0].update(probes)
    return pod


def exec_probe(*command: str, **timing: Any) -> dict[str, Any]:
    return {"exec": {"command": list(command)}, **timing}


async def pod_until(api: ApiClient, name: str, check: Callable[[Any], bool]) -> Any:
    found: list[Any] = []

    async def reached() -> bool:
        found[:] = [await core_api(api).read_namespaced_pod(name, "default")]
        try:
            return check(found[0])
        except (TypeError, IndexError, AttributeError):  # no status of that part yet
            return False

    await eventually(reached, within=10)
    return found[0]


#: what `condition` answers for a condition the pod does not have yet
_ABSENT = SimpleNamespace(status=None, reason=None, message=None, last_transition_time=None)


def condition(pod: Any, kind: str) -> Any:
    return next((c for c in pod.status.conditions or () if c.type == kind), _ABSENT)


def main(pod: Any) -> Any:
    return pod.status.container_statuses[0]


async def events(api: ApiClient, name: str, reason: str) -> list[Any]:
    found = await core_api(api).list_namespaced_event(
        "default", field_selector=f"involvedObject.name={name},reason={reason}"
    )
    return list(found.items)


async def test_a_container_running_but_never_ready(kube_api: ApiClient) -> None:
    """A readiness probe that always fails: Running, started, not ready, the pod's Ready
    and ContainersReady conditions False with the kubelet's reason and message, and a
    Warning Unhealthy Event with the probe's output."""
    probe = exec_probe("sh", "-c", "echo not yet; exit 1", periodSeconds=5)
    await core_api(kube_api).create_namespaced_pod(
        "default", probed("never", ["sleep", "infinity"], readinessProbe=probe)
    )
    pod = await pod_until(kube_api, "never", lambda p: p.status.phase == "Running")
    assert (main(pod).started, main(pod).ready) == (True, False)
    for kind in ("Ready", "ContainersReady"):
        found = condition(pod, kind)
        assert (found.status, found.reason, found.message) == (
            "False",
            "ContainersNotReady",
            "containers with unready status: [main]",
        )

    async def unhealthy() -> bool:
        return bool(await events(kube_api, "never", "Unhealthy"))

    await eventually(unhealthy)
    (event,) = await events(kube_api, "never", "Unhealthy")
    assert event.type == "Warning" and event.source.component == "kubelet"
    assert event.message == "Readiness probe failed: not yet\n"
    assert event.involved_object.field_path == "spec.containers{main}"
    stored = await core_api(kube_api).read_namespaced_pod("never", "default")
    assert stored.spec.containers[0].readiness_probe.failure_threshold == 3  # defaulted


async def test_ready_after_the_initial_delay_with_a_transition_time(kube_api: ApiClient) -> None:
    """`initialDelaySeconds` scripts "ready after N seconds"; Ready's lastTransitionTime
    is when it became True."""
    probe = exec_probe("true", initialDelaySeconds=30, periodSeconds=5)
    await core_api(kube_api).create_namespaced_pod(
        "default", probed("later", ["sleep", "infinity"], readinessProbe=probe)
    )
    running = await pod_until(kube_api, "later", lambda p: p.status.phase == "Running")
    assert condition(running, "Ready").status == "False"
    ready = await pod_until(kube_api, "later", lambda p: condition(p, "Ready").status == "True")
    started: datetime = main(ready).state.running.started_at
    became = condition(ready, "Ready").last_transition_time
    assert 29 <= (became - started).total_seconds() <= 60
    assert main(ready).ready and condition(ready, "ContainersReady").status == "True"
    assert condition(ready, "Ready").reason is None


async def test_success_threshold_counts_successes_in_a_row(kube_api: ApiClient) -> None:
    probe = exec_probe("true", periodSeconds=10, successThreshold=3)
    await core_api(kube_api).create_namespaced_pod(
        "default", probed("thrice", ["sleep", "infinity"], readinessProbe=probe)
    )
    ready = await pod_until(
        kube_api, "thrice", lambda p: bool(p.status.container_statuses[0].ready)
    )
    started = main(ready).state.running.started_at
    # probes at 0, 10 and 20 s: ready at the third
    assert 19 <= (condition(ready, "Ready").last_transition_time - started).total_seconds() <= 45


async def versions_until_ready(api: ApiClient, name: str, since: str) -> list[Any]:
    """The pod in each of its versions after `since`, until it is Ready. Watched, not
    polled: a state the kubelet holds for a fraction of a wall second (the simulated
    clock runs 50 times as fast) can fall between two polls on a busy machine, while a
    watch hands over every version."""
    seen: list[Any] = []
    stream = watch.Watch()
    async with asyncio.timeout(20):
        async for event in stream.stream(
            core_api(api).list_namespaced_pod,
            "default",
            field_selector=f"metadata.name={name}",
            resource_version=since,
            timeout_seconds=20,
        ):
            seen.append(event["object"])
            if condition(seen[-1], "Ready").status == "True":
                stream.stop()
    return seen


async def test_transition_time_moves_only_when_the_status_does(kube_api: ApiClient) -> None:
    """Two containers becoming ready one after the other: the message changes from
    `[a b]` to `[b]` while Ready stays False, so its lastTransitionTime stays."""
    pod = running_pod("pair", ["sleep", "infinity"], terminationGracePeriodSeconds=0)
    first: dict[str, Any] = {"name": "a", "image": "x", "command": ["sleep", "infinity"]}
    second = {**first, "name": "b"}
    first["readinessProbe"] = exec_probe("true", initialDelaySeconds=10, periodSeconds=5)
    second["readinessProbe"] = exec_probe("true", initialDelaySeconds=40, periodSeconds=5)
    pod["spec"]["containers"] = [first, second]
    created = await core_api(kube_api).create_namespaced_pod("default", pod)
    versions = await versions_until_ready(kube_api, "pair", created.metadata.resource_version)
    ready = [condition(version, "Ready") for version in versions]

    def first_with(message: str) -> Any:
        return next(each for each in ready if each.message == message)

    both = first_with("containers with unready status: [a b]")
    one = first_with("containers with unready status: [b]")
    done = ready[-1]
    assert one.last_transition_time == both.last_transition_time
    assert done.last_transition_time > one.last_transition_time
    scheduled = condition(versions[-1], "PodScheduled")
    assert scheduled.last_transition_time <= both.last_transition_time


async def test_a_failed_liveness_probe_restarts_the_container(kube_api: ApiClient) -> None:
    probe = exec_probe("false", periodSeconds=5, failureThreshold=3)
    await core_api(kube_api).create_namespaced_pod(
        "default", probed("dying", ["sleep", "infinity"], livenessProbe=probe)
    )
    restarted = await pod_until(kube_api, "dying", lambda p: main(p).restart_count >= 1)
    assert main(restarted).last_state.terminated.exit_code == 137
    (killing,) = await events(kube_api, "dying", "Killing")
    assert killing.message == "Container main failed liveness probe, will be restarted"
    (unhealthy,) = await events(kube_api, "dying", "Unhealthy")
    assert unhealthy.message == "Liveness probe failed: " and unhealthy.count >= 3


async def test_startup_probe_gates_readiness_and_fails_the_pod(kube_api: ApiClient) -> None:
    """Until its startup probe passes a container is not started and its readiness
    probe does not run; a failed startup probe kills it (Never: the pod fails)."""
    pod = probed(
        "slow-start",
        ["sleep", "infinity"],
        startupProbe=exec_probe("false", periodSeconds=5, failureThreshold=2),
        readinessProbe=exec_probe("true", periodSeconds=5),
    )
    pod["spec"]["restartPolicy"] = "Never"
    await core_api(kube_api).create_namespaced_pod("default", pod)
    running = await pod_until(kube_api, "slow-start", lambda p: p.status.phase == "Running")
    assert (main(running).started, main(running).ready) == (False, False)
    failed = await pod_until(kube_api, "slow-start", lambda p: p.status.phase == "Failed")
    assert main(failed).state.terminated.exit_code == 137
    (killing,) = await events(kube_api, "slow-start", "Killing")
    assert killing.message == "Container main failed startup probe"
    (unhealthy,) = await events(kube_api, "slow-start", "Unhealthy")
    assert unhealthy.message == "Startup probe failed: "  # the readiness probe never ran


async def test_a_passed_startup_probe_starts_the_readiness_probe(kube_api: ApiClient) -> None:
    pod = probed(
        "warm",
        ["sleep", "infinity"],
        startupProbe=exec_probe("true", initialDelaySeconds=20, periodSeconds=5),
        readinessProbe=exec_probe("true", periodSeconds=5),
    )
    await core_api(kube_api).create_namespaced_pod("default", pod)
    running = await pod_until(kube_api, "warm", lambda p: p.status.phase == "Running")
    assert (main(running).started, main(running).ready) == (False, False)
    ready = await pod_until(kube_api, "warm", lambda p: bool(main(p).ready))
    assert main(ready).started


async def test_a_probe_that_outlives_its_timeout_fails(kube_api: ApiClient) -> None:
    probe = exec_probe("sh", "-c", "sleep 5", periodSeconds=10, timeoutSeconds=2)
    await core_api(kube_api).create_namespaced_pod(
        "default", probed("slow-probe", ["sleep", "infinity"], readinessProbe=probe)
    )

    async def timed_out() -> bool:
        return bool(await events(kube_api, "slow-probe", "Unhealthy"))

    await eventually(timed_out)
    (event,) = await events(kube_api, "slow-probe", "Unhealthy")
    assert event.message == 'Readiness probe failed: command "sh -c sleep 5" timed out'


async def test_init_containers_hold_initialized_and_count_their_restarts(
    kube_api: ApiClient,
) -> None:
    pod = running_pod("init", ["sleep", "infinity"], restartPolicy="OnFailure")
    pod["spec"]["initContainers"] = [
        {"name": "flaky", "image": "x", "command": ["sh", "-c", "sleep 2; exit 1"]},
        {"name": "setup", "image": "x", "command": ["sleep", "1"]},
    ]
    await core_api(kube_api).create_namespaced_pod("default", pod)
    crashing = await pod_until(
        kube_api,
        "init",
        lambda p: (
            (p.status.init_container_statuses or [None])[0] is not None
            and p.status.init_container_statuses[0].restart_count >= 1
        ),
    )
    assert crashing.status.phase == "Pending"
    initialized = condition(crashing, "Initialized")
    assert (initialized.status, initialized.reason, initialized.message) == (
        "False",
        "ContainersNotInitialized",
        "containers with incomplete status: [flaky setup]",
    )
    flaky = crashing.status.init_container_statuses[0]
    assert flaky.last_state.terminated.exit_code == 1 and not flaky.ready
    assert main(crashing).state.waiting.reason == "PodInitializing"


async def test_a_finished_init_container_is_ready_and_initializes_the_pod(
    kube_api: ApiClient,
) -> None:
    pod = running_pod("setup", ["sleep", "infinity"])
    pod["spec"]["initContainers"] = [{"name": "prepare", "image": "x", "command": ["true"]}]
    await core_api(kube_api).create_namespaced_pod("default", pod)
    running = await pod_until(kube_api, "setup", lambda p: p.status.phase == "Running")
    (prepare,) = running.status.init_container_statuses
    assert (prepare.ready, prepare.started) == (True, False)
    assert prepare.state.terminated.reason == "Completed"
    assert condition(running, "Initialized").status == "True"


async def test_a_completed_pod_reports_pod_completed(kube_api: ApiClient) -> None:
    await core_api(kube_api).create_namespaced_pod(
        "default", running_pod("done", ["true"], restartPolicy="Never")
    )
    done = await pod_until(kube_api, "done", lambda p: p.status.phase == "Succeeded")
    got = {c.type: (c.status, c.reason) for c in done.status.conditions}
    assert got == {
        "PodReadyToStartContainers": ("False", None),
        "Initialized": ("True", "PodCompleted"),
        "Ready": ("False", "PodCompleted"),
        "ContainersReady": ("False", "PodCompleted"),
        "PodScheduled": ("True", None),
    }


# the pure parts ------------------------------------------------------------------------


def _status(state: dict[str, Any], **more: Any) -> dict[str, Any]:
    return {"name": "c", "state": state, **more}


RUNNING: dict[str, Any] = {"running": {}}
WAITING: dict[str, Any] = {"waiting": {"reason": "CrashLoopBackOff"}}


def _exited(code: int) -> dict[str, Any]:
    return {"terminated": {"exitCode": code}}


@pytest.mark.parametrize(
    ("policy", "container", "terminal", "expected"),
    [
        pytest.param("Always", _status(RUNNING), False, "Running", id="running"),
        pytest.param("Always", _status({"waiting": {}}), False, "Pending", id="not-started"),
        pytest.param("Never", _status(_exited(0)), False, "Succeeded", id="exit-0"),
        pytest.param("Never", _status(_exited(3)), False, "Failed", id="exit-3"),
        pytest.param("OnFailure", _status(_exited(3)), False, "Running", id="will-restart"),
        pytest.param("Always", _status(_exited(0)), False, "Running", id="always-restarts"),
        pytest.param("Always", _status(_exited(137)), True, "Failed", id="killed-on-delete"),
        pytest.param(
            "OnFailure",
            _status(WAITING, lastState={"terminated": {"exitCode": 1}}),
            False,
            "Running",
            id="crash-loop",
        ),
    ],
)
def test_phase_is_getphase(
    policy: str, container: dict[str, Any], terminal: bool, expected: str
) -> None:
    spec = {"restartPolicy": policy, "containers": [{"name": "c"}]}
    status = {"containerStatuses": [container]}
    assert pod_status.phase(spec, status, terminal=terminal) == expected


def test_a_failed_init_container_fails_a_never_pod_and_holds_others_pending() -> None:
    spec: dict[str, Any] = {"initContainers": [{"name": "i"}], "containers": [{"name": "c"}]}
    status = {
        "initContainerStatuses": [{"name": "i", "state": _exited(1)}],
        "containerStatuses": [_status({"waiting": {"reason": "PodInitializing"}})],
    }
    assert pod_status.phase({**spec, "restartPolicy": "Never"}, status) == "Failed"
    assert pod_status.phase({**spec, "restartPolicy": "OnFailure"}, status) == "Pending"


def test_readiness_gates_hold_ready() -> None:
    spec = {"containers": [{"name": "c"}], "readinessGates": [{"conditionType": "x/Up"}]}
    status = {"phase": "Running", "containerStatuses": [_status(RUNNING, ready=True)]}
    missing = pod_status.kubelet_conditions(spec, status, [], sandbox=True)[2]
    assert missing == {
        "type": "Ready",
        "status": "False",
        "reason": "ReadinessGatesNotReady",
        "message": 'corresponding condition of pod readiness gate "x/Up" does not exist.',
    }
    down = [{"type": "x/Up", "status": "False"}]
    assert pod_status.kubelet_conditions(spec, status, down, sandbox=True)[2]["message"] == (
        'the status of pod readiness gate "x/Up" is not "True", but False'
    )


def test_merge_keeps_others_conditions_in_front() -> None:
    stored = [
        {"type": "PodScheduled", "status": "False"},
        {"type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI"},
    ]
    own = [{"type": "Ready", "status": "False"}, {"type": "PodScheduled", "status": "True"}]
    assert [c["type"] for c in pod_status.merge_conditions(stored, own)] == [
        "DisruptionTarget",
        "Ready",
        "PodScheduled",
    ]


@pytest.mark.parametrize(
    ("kind", "results", "verdicts"),
    [
        # readiness starts unready; one success makes it ready, three failures unready
        (ProbeKind.READINESS, [True, False, False, False], [True, True, True, False]),
        # liveness starts alive: the first failures change nothing
        (ProbeKind.LIVENESS, [False, False, True, False, False, False], [True] * 5 + [False]),
        # startup starts unknown
        (ProbeKind.STARTUP, [False, False, False], [None, None, False]),
    ],
)
def test_a_verdict_changes_after_its_threshold(
    kind: ProbeKind, results: list[bool], verdicts: list[bool | None]
) -> None:
    verdict = Verdict(Probe.of(kind, {"exec": {"command": ["true"]}}))
    seen = []
    for ok in results:
        verdict.record(ok)
        seen.append(verdict.result)
    assert seen == verdicts
