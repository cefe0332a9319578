"""Kubernetes objects to observations: what is read from a pod, and what is not published."""

from __future__ import annotations

from typing import Any, TypeVar

import msgspec
import pytest

from lavalog.controller.watchers.core import translate
from lavalog.controller.watchers.core.objects import Command, Job, KubeObject, Pod, PodGroup
from lavalog.controller.watchers.core.translate import Translator
from lavalog.events.observations import (
    MAX_TERMINATION_MESSAGE,
    CommandIssued,
    ContainerEnd,
    JobDeleted,
    JobObserved,
    PodDeleted,
    PodGroupCondition,
    PodGroupObserved,
    PodObserved,
)
from lavalog.events.timestamps import from_rfc3339
from tests.watchers import manifests as m

T = TypeVar("T", bound=KubeObject)


def decode(kind: type[T], obj: dict[str, Any]) -> T:
    return msgspec.json.decode(msgspec.json.encode(obj), type=kind)


def observe_pod(obj: dict[str, Any]) -> PodObserved | None:
    return translate.observe_pod(decode(Pod, obj), 1000.0)


EARLIER = "2026-03-01T10:00:02Z"

# (what the pod looks like, phase, exit code, reason, node, restarts, deleting)
# fmt: off
POD_CASES = [
    pytest.param(m.pod(phase="Pending", node="", containers=None), "Pending", None, "", "", 0, False, id="unscheduled"),
    pytest.param(m.pod(containers=[m.container(m.running())]), "Running", None, "", "node-1", 0, False, id="running"),
    pytest.param(m.pod(phase="Failed", containers=[m.container(m.terminated(3, "Error"))]), "Failed", 3, "Error", "node-1", 0, False, id="exit-code-3"),
    pytest.param(m.pod(phase="Failed", containers=[m.container(m.terminated(137, "OOMKilled"))]), "Failed", 137, "OOMKilled", "node-1", 0, False, id="oom-killed"),
    pytest.param(m.pod(phase="Failed", reason="Evicted", message="The node was low on resource: memory.", containers=[m.container(m.terminated(137, "ContainerStatusUnknown"))]), "Failed", 137, "Evicted", "node-1", 0, False, id="evicted"),
    pytest.param(m.pod(phase="Failed", reason="NodeLost", message="Node node-1 which was running pod mpi-worker-1 is unresponsive", containers=[m.container(m.running())]), "Failed", None, "NodeLost", "node-1", 0, False, id="node-lost"),
    pytest.param(m.pod(deleting=True, containers=[m.container(m.running())]), "Running", None, "", "node-1", 0, True, id="being-deleted"),
    pytest.param(m.pod(containers=[m.container(m.running(), restarts=2, last=m.terminated(1, "Error", started=EARLIER))]), "Running", None, "", "node-1", 2, False, id="restarted-in-place"),
    pytest.param(m.pod(containers=[m.container(m.running(), name="a", restarts=1), m.container(m.running(), name="b", restarts=4)]), "Running", None, "", "node-1", 4, False, id="highest-restart-count"),
    pytest.param(m.pod(phase="Succeeded", containers=[m.container(m.terminated(0, "Completed"))]), "Succeeded", None, "Completed", "node-1", 0, False, id="succeeded"),
    pytest.param(m.pod(phase="Failed", containers=[m.container(m.terminated(0, "Completed"), name="agent"), m.container(m.terminated(137, "OOMKilled"), name="trainer")]), "Failed", 137, "OOMKilled", "node-1", 0, False, id="sidecar-exited-0-first"),
    pytest.param(m.pod(phase="Failed", containers=[m.container(m.terminated(0, "Completed"))], init_containers=[m.container(m.terminated(2, "Error"), name="setup")]), "Failed", 2, "Error", "node-1", 0, False, id="init-container-after-regular"),
    pytest.param(m.pod(phase="Failed", containers=[m.container(m.terminated(1, "Error"), name="a"), m.container(m.terminated(3, "Error"), name="b")], init_containers=[m.container(m.terminated(4, "Error"), name="setup")]), "Failed", 1, "Error", "node-1", 0, False, id="first-non-zero-regular"),
    pytest.param(m.pod(phase="Failed", containers=[m.container(m.terminated(0, "Completed"))]), "Failed", None, "Completed", "node-1", 0, False, id="every-code-0"),
]
# fmt: on


@pytest.mark.parametrize(
    ("obj", "phase", "exit_code", "reason", "node", "restarts", "deleting"), POD_CASES
)
def test_pod_facts(
    obj: dict[str, Any],
    phase: str,
    exit_code: int | None,
    reason: str,
    node: str,
    restarts: int,
    deleting: bool,
) -> None:
    seen = observe_pod(obj)
    assert seen is not None
    assert (
        seen.phase,
        seen.exit_code,
        seen.reason,
        seen.node,
        seen.restart_count,
        seen.deleting,
    ) == (
        phase,
        exit_code,
        reason,
        node,
        restarts,
        deleting,
    )
    assert (seen.key, seen.job_uid, seen.pod, seen.pod_uid) == (
        "default/mpi",
        m.JOB_UID,
        "mpi-worker-1",
        m.POD_UID,
    )
    assert (seen.task, seen.index, seen.job_version, seen.time) == ("worker", 1, 2, 1000.0)


def test_pod_times() -> None:
    failed = observe_pod(
        m.pod(
            phase="Failed",
            containers=[
                m.container(
                    m.terminated(3, "Error"), last=m.terminated(1, "Error", started=EARLIER)
                )
            ],
        )
    )
    assert failed is not None
    assert failed.created == from_rfc3339(m.CREATED)
    assert failed.scheduled == from_rfc3339(m.SCHEDULED)
    assert failed.started == from_rfc3339(EARLIER)  # the first run, not the last restart
    assert failed.finished == from_rfc3339(m.FINISHED)
    pending = observe_pod(m.pod(phase="Pending", node="", containers=None))
    assert pending is not None
    assert (pending.scheduled, pending.started, pending.finished) == (None, None, None)


def test_which_container_failed() -> None:
    """Kubernetes' podFailurePolicy's container: regular containers first, then init
    ones, skipping exit code 0; every terminated container is kept with its reason and
    its termination message, init containers marked."""
    seen = observe_pod(
        m.pod(
            phase="Failed",
            containers=[
                m.container(
                    m.terminated(0, "Completed", message="shipped 120 lines"), name="agent"
                ),
                m.container(m.terminated(137, "OOMKilled", message="CUDA OOM"), name="trainer"),
            ],
            init_containers=[m.container(m.terminated(0, "Completed"), name="setup")],
        )
    )
    assert seen is not None
    assert (seen.exit_code, seen.container, seen.reason, seen.message) == (
        137,
        "trainer",
        "OOMKilled",
        "CUDA OOM",
    )
    assert seen.containers == (
        ContainerEnd(name="agent", exit_code=0, reason="Completed", message="shipped 120 lines"),
        ContainerEnd(name="trainer", exit_code=137, reason="OOMKilled", message="CUDA OOM"),
        ContainerEnd(name="setup", exit_code=0, reason="Completed", init=True),
    )


def test_nothing_new_is_written_for_a_running_pod() -> None:
    """Without an ended container or a disruption, the log carries no new field."""
    seen = observe_pod(m.pod(containers=[m.container(m.running())]))
    assert seen is not None
    body = msgspec.json.decode(msgspec.json.encode(seen))
    assert not {"container", "containers", "disruption"} & set(body)


def test_a_container_ending_beside_a_running_one_is_news() -> None:
    translator = Translator(translate.PODS)
    both = m.pod(
        containers=[m.container(m.running(), name="a"), m.container(m.running(), name="b")]
    )
    one_ended = m.pod(
        containers=[
            m.container(m.running(), name="a"),
            m.container(m.terminated(137, "OOMKilled"), name="b"),
        ]
    )
    assert translator.changed(decode(Pod, both), 1.0) is not None
    seen = translator.changed(decode(Pod, one_ended), 2.0)
    assert isinstance(seen, PodObserved)
    assert (seen.phase, seen.exit_code) == ("Running", None)
    assert seen.containers == (ContainerEnd(name="b", exit_code=137, reason="OOMKilled"),)


def test_last_words_keep_the_end_within_the_kubelets_cap() -> None:
    tail = "é" * 10 + "x" * (MAX_TERMINATION_MESSAGE - 3)
    seen = observe_pod(
        m.pod(
            phase="Failed",
            containers=[m.container(m.terminated(1, "Error", message="head " + tail))],
        )
    )
    assert seen is not None
    [end] = seen.containers or ()
    assert len(end.message.encode()) <= MAX_TERMINATION_MESSAGE
    assert end.message.endswith("x" * (MAX_TERMINATION_MESSAGE - 3))
    assert end.message.startswith("é")  # not half a character
    assert seen.message == end.message


@pytest.mark.parametrize(
    "reason",
    [
        "PreemptionByScheduler",
        "EvictionByEvictionAPI",
        "DeletionByTaintManager",
        "TerminationByKubelet",
    ],
)
def test_disruption_target(reason: str) -> None:
    """The `DisruptionTarget=True` condition's reason rides with the change it announces
    (the deletion, or the kubelet's failing the pod), and with the pod's disappearance."""
    translator = Translator(translate.PODS)
    running = m.pod(containers=[m.container(m.running())])
    condition = {"type": "DisruptionTarget", "status": "True", "reason": reason}
    marked = m.with_condition(running, condition)
    translator.changed(decode(Pod, running), 1.0)
    assert translator.changed(decode(Pod, marked), 2.0) is None  # news only with the deletion
    deleting = m.with_condition(
        m.pod(deleting=True, containers=[m.container(m.running())]), condition
    )
    seen = translator.changed(decode(Pod, deleting), 3.0)
    assert isinstance(seen, PodObserved)
    assert (seen.deleting, seen.disruption) == (True, reason)
    gone = translate.pod_deleted(decode(Pod, marked), 4.0)
    assert gone is not None
    assert (gone.disruption, gone.node) == (reason, "node-1")
    not_true = m.with_condition(
        running, {"type": "DisruptionTarget", "status": "False", "reason": reason}
    )
    quiet = observe_pod(not_true)
    assert quiet is not None
    assert quiet.disruption is msgspec.UNSET


def test_failed_pod_message() -> None:
    evicted = observe_pod(
        m.pod(
            phase="Failed",
            reason="Evicted",
            message="The node was low on resource: memory.",
            containers=[],
        )
    )
    assert evicted is not None
    assert evicted.message == "The node was low on resource: memory."


@pytest.mark.parametrize(
    "obj",
    [
        pytest.param(m.pod(owners=[]), id="no-owner"),
        pytest.param(
            m.pod(owners=[{**m.job_owner(), "apiVersion": "batch/v1"}]), id="a-batch-v1-job"
        ),
        pytest.param(
            m.pod(owners=[{**m.job_owner(), "controller": False}]), id="not-the-controller"
        ),
        pytest.param(
            m.pod(labels={"app": "web"})
            | {"metadata": {**m.pod()["metadata"], "labels": {}, "annotations": {}}},
            id="no-task-label",
        ),
    ],
)
def test_pods_of_no_volcano_job_are_ignored(obj: dict[str, Any]) -> None:
    assert observe_pod(obj) is None


# (first, then, published again?)
# fmt: off
POD_CHANGES = [
    pytest.param(m.pod(containers=[m.container(m.running())]), m.pod(resource_version="101", ready_since=m.FINISHED, containers=[m.container(m.running())]), False, id="conditions-churn"),
    pytest.param(m.pod(containers=[m.container(m.running())]), m.pod(resource_version="101", labels={**m.pod()["metadata"]["labels"], "team": "ml"}, containers=[m.container(m.running())]), False, id="label-edit"),
    pytest.param(m.pod(phase="Pending", node="", containers=None), m.pod(phase="Pending", resource_version="101", containers=None), True, id="bound-to-a-node"),
    pytest.param(m.pod(containers=[m.container(m.running())]), m.pod(resource_version="101", phase="Failed", containers=[m.container(m.terminated(3, "Error"))]), True, id="failed"),
    pytest.param(m.pod(containers=[m.container(m.running())]), m.pod(resource_version="101", containers=[m.container(m.running(), restarts=1)]), True, id="restarted"),
    pytest.param(m.pod(containers=[m.container(m.running())]), m.pod(resource_version="101", deleting=True, containers=[m.container(m.running())]), True, id="deletion-asked"),
    pytest.param(m.pod(containers=[m.container(m.running(), ready=False)]), m.pod(resource_version="101", containers_ready_since=m.FINISHED, containers=[m.container(m.running())]), True, id="containers-ready"),
    pytest.param(m.pod(phase="Pending", containers=[m.container({"waiting": {}})]), m.pod(phase="Pending", resource_version="101", containers=[m.container({"waiting": {}}, ready=True)]), False, id="readiness-while-pending"),
    pytest.param(m.pod(phase="Pending", init_containers=[m.container(m.running(), name="setup")], containers=[]), m.pod(phase="Pending", resource_version="101", init_containers=[m.container(m.running(), name="setup", restarts=1)], containers=[]), True, id="init-container-restarted"),
]
# fmt: on


@pytest.mark.parametrize(("first", "then", "published"), POD_CHANGES)
def test_only_changes_that_matter_are_published(
    first: dict[str, Any], then: dict[str, Any], published: bool
) -> None:
    translator = Translator(translate.PODS)
    assert translator.changed(decode(Pod, first), 1.0) is not None
    assert (translator.changed(decode(Pod, then), 2.0) is not None) is published


def test_the_same_fact_has_the_same_id_whatever_the_resource_version() -> None:
    """A new leader relisting a pod whose status churned publishes the fact under its old id."""
    before = observe_pod(m.pod(containers=[m.container(m.running())]))
    after = observe_pod(
        m.pod(resource_version="999", ready_since=m.FINISHED, containers=[m.container(m.running())])
    )
    failed = observe_pod(
        m.pod(
            resource_version="1000",
            phase="Failed",
            containers=[m.container(m.terminated(3, "Error"))],
        )
    )
    assert before is not None and after is not None and failed is not None
    assert before.id == after.id
    assert before.id.startswith(f"pod/{m.POD_UID}/Running/")
    assert failed.id != before.id


def test_restarts_of_every_container_are_added_up() -> None:
    """Volcano's TaskFailed adds up restartCount over init and regular containers."""
    crash_looping_init = observe_pod(
        m.pod(
            phase="Pending",
            init_containers=[m.container(m.terminated(1, "Error"), name="setup", restarts=4)],
            containers=[m.container({"waiting": {"reason": "PodInitializing"}})],
        )
    )
    two_containers = observe_pod(
        m.pod(
            containers=[
                m.container(m.running(), name="a", restarts=1),
                m.container(m.running(), name="b", restarts=4),
            ],
            init_containers=[m.container(m.terminated(0, "Completed"), name="setup", restarts=2)],
        )
    )
    assert crash_looping_init is not None and two_containers is not None
    assert (crash_looping_init.restart_count, crash_looping_init.total_restarts) == (0, 4)
    assert (two_containers.restart_count, two_containers.total_restarts) == (4, 7)


# (containers, phase, containers_ready)
# fmt: off
READINESS_CASES = [
    pytest.param([m.container(m.running())], "Running", True, id="running-without-probe"),
    pytest.param([m.container(m.running()), m.container(m.running(), name="side", ready=False)], "Running", False, id="one-not-ready"),
    pytest.param([], "Running", True, id="no-container-status-yet"),
    pytest.param([m.container({"waiting": {"reason": "ContainerCreating"}})], "Pending", False, id="pending"),
    pytest.param([m.container(m.terminated(0, "Completed"), ready=True)], "Succeeded", False, id="finished"),
]
# fmt: on


@pytest.mark.parametrize(("containers", "phase", "ready"), READINESS_CASES)
def test_containers_ready(containers: list[dict[str, Any]], phase: str, ready: bool) -> None:
    """Volcano's dependsOn counts a Running pod whose every container is ready."""
    seen = observe_pod(m.pod(phase=phase, containers=containers))
    assert seen is not None and seen.containers_ready is ready


def test_readiness_turns_are_published_as_distinct_facts() -> None:
    """Readiness goes back and forth while a pod runs: each turn is published, under an id
    of its own (ContainersReady's time tells the turns apart), the same on a relist."""
    translator = Translator(translate.PODS)
    turns = [
        m.pod(containers=[m.container(m.running(), ready=False)], containers_ready_since=m.STARTED),
        m.pod(containers=[m.container(m.running())], containers_ready_since=EARLIER),
        m.pod(
            containers=[m.container(m.running(), ready=False)], containers_ready_since=m.FINISHED
        ),
    ]
    seen = [translator.changed(decode(Pod, turn), float(n)) for n, turn in enumerate(turns)]
    assert [o.containers_ready for o in seen if isinstance(o, PodObserved)] == [False, True, False]
    ids = [o.id for o in seen if o is not None]
    assert len(set(ids)) == 3
    relisted = observe_pod(turns[2])
    assert relisted is not None and relisted.id == ids[2]


def test_a_deleted_pod() -> None:
    translator = Translator(translate.PODS)
    last = decode(Pod, m.pod(phase="Failed", containers=[m.container(m.terminated(3, "Error"))]))
    translator.changed(last, 1.0)
    gone = translator.deleted(last, 2.0)
    assert gone == PodDeleted(
        id=f"pod/{m.POD_UID}/deleted",
        key="default/mpi",
        job_uid=m.JOB_UID,
        time=2.0,
        pod="mpi-worker-1",
        pod_uid=m.POD_UID,
        task="worker",
        index=1,
        job_version=2,
        phase="Failed",
        exit_code=3,
        reason="Error",
        node="node-1",
        container="main",
        containers=(ContainerEnd(name="main", exit_code=3, reason="Error"),),
    )
    # forgotten: the same state seen again (a new incarnation would have a new uid) is news
    assert translator.changed(last, 3.0) is not None


def test_jobs_publish_generations_and_deletion_not_status_writes() -> None:
    translator = Translator(translate.JOBS)
    created = translator.changed(decode(Job, m.vcjob()), 1.0)
    assert isinstance(created, JobObserved)
    assert (created.id, created.key, created.job_uid, created.generation, created.deleting) == (
        f"job/{m.JOB_UID}/1",
        "default/mpi",
        m.JOB_UID,
        1,
        False,
    )
    assert created.spec["tasks"][0]["replicas"] == 2
    assert (
        translator.changed(decode(Job, m.vcjob(resource_version="51", state="Running")), 2.0)
        is None
    )
    scaled = translator.changed(
        decode(Job, m.vcjob(generation=2, resource_version="52", state="Running")), 3.0
    )
    assert (
        isinstance(scaled, JobObserved)
        and scaled.id == f"job/{m.JOB_UID}/2"
        and scaled.spec["tasks"][0]["replicas"] == 4
    )
    deleting = translator.changed(
        decode(Job, m.vcjob(generation=2, resource_version="53", deleting=True)), 4.0
    )
    assert (
        isinstance(deleting, JobObserved)
        and deleting.deleting
        and deleting.id == f"job/{m.JOB_UID}/2/deleting"
    )
    assert translator.deleted(
        decode(Job, m.vcjob(generation=2, resource_version="54")), 5.0
    ) == JobDeleted(id=f"job/{m.JOB_UID}/deleted", key="default/mpi", job_uid=m.JOB_UID, time=5.0)


def test_podgroups() -> None:
    translator = Translator(translate.PODGROUPS)
    pending = translator.changed(
        decode(
            PodGroup,
            m.podgroup(unschedulable=("NotEnoughResources", "2/2 tasks in gang unschedulable")),
        ),
        1.0,
    )
    assert isinstance(pending, PodGroupObserved)
    assert (pending.key, pending.job_uid, pending.phase, pending.reason, pending.message) == (
        "default/mpi",
        m.JOB_UID,
        "Pending",
        "NotEnoughResources",
        "2/2 tasks in gang unschedulable",
    )
    assert pending.podgroup == f"mpi-{m.JOB_UID}" and pending.id.endswith("/60")
    churn = m.podgroup(
        unschedulable=("NotEnoughResources", "2/2 tasks in gang unschedulable"),
        since=m.STARTED,
        resource_version="61",
    )
    assert translator.changed(decode(PodGroup, churn), 2.0) is None
    running = translator.changed(
        decode(PodGroup, m.podgroup(phase="Running", resource_version="62")), 3.0
    )
    assert isinstance(running, PodGroupObserved) and (running.phase, running.reason) == (
        "Running",
        "",
    )
    gone = translator.deleted(
        decode(PodGroup, m.podgroup(phase="Running", resource_version="63")), 4.0
    )
    assert isinstance(gone, PodGroupObserved) and gone.deleted and gone.id.endswith("/deleted")


def test_podgroup_conditions_are_published_when_the_newest_one_changes() -> None:
    """vc-scheduler keeps Unschedulable=True when it adds Scheduled=True and moves their
    times at each cycle: the conditions go out with their times, and a PodGroup is
    published again when its newest True condition changes, not when times alone move."""
    translator = Translator(translate.PODGROUPS)
    waits = ("NotEnoughResources", "2/2 tasks in gang unschedulable")
    first = translator.changed(decode(PodGroup, m.podgroup(unschedulable=waits)), 1.0)
    assert isinstance(first, PodGroupObserved)
    assert first.conditions == (
        PodGroupCondition(
            type="Unschedulable",
            status="True",
            reason=waits[0],
            message=waits[1],
            last_transition_time=from_rfc3339(m.CREATED),
        ),
    )
    scheduled = m.podgroup(
        phase="Inqueue", unschedulable=waits, scheduled=m.STARTED, resource_version="61"
    )
    seen = translator.changed(decode(PodGroup, scheduled), 2.0)
    assert isinstance(seen, PodGroupObserved) and not isinstance(seen.conditions, msgspec.UnsetType)
    assert [(c.type, c.last_transition_time) for c in seen.conditions] == [
        ("Unschedulable", from_rfc3339(m.CREATED)),
        ("Scheduled", from_rfc3339(m.STARTED)),
    ]
    later_cycle = m.podgroup(
        phase="Inqueue", unschedulable=waits, scheduled=m.FINISHED, resource_version="62"
    )
    assert translator.changed(decode(PodGroup, later_cycle), 3.0) is None
    waits_again = m.podgroup(
        phase="Inqueue",
        unschedulable=waits,
        since="2026-03-01T10:05:00Z",
        scheduled=m.FINISHED,
        resource_version="63",
    )
    assert isinstance(translator.changed(decode(PodGroup, waits_again), 4.0), PodGroupObserved)


def test_podgroup_phases_may_repeat() -> None:
    """Running, Unknown, Running: the second Running is a new fact with a new id."""
    translator = Translator(translate.PODGROUPS)
    ids = [
        o.id
        for rv, phase in (("60", "Running"), ("61", "Unknown"), ("62", "Running"))
        if (
            o := translator.changed(
                decode(PodGroup, m.podgroup(phase=phase, resource_version=rv)), 1.0
            )
        )
    ]
    assert len(set(ids)) == 3


def test_commands_are_published_once_for_their_job() -> None:
    translator = Translator(translate.COMMANDS)
    issued = translator.changed(decode(Command, m.command()), 1.0)
    assert issued == CommandIssued(
        id="command/cmd-0001",
        key="default/mpi",
        job_uid=m.JOB_UID,
        time=1.0,
        command="mpi-abortjob-x7k2p",
        action="AbortJob",
        reason="by vcctl",
        message="abort the job",
    )
    assert translator.changed(decode(Command, m.command(resource_version="71")), 2.0) is None
    assert translator.deleted(decode(Command, m.command()), 3.0) is None


@pytest.mark.parametrize(
    "command",
    [
        pytest.param(m.command(kind="Queue"), id="a-queue"),
        pytest.param(m.command(api_version="batch.volcano.sh/v1beta1"), id="another-version"),
        pytest.param(m.command(api_version="batch/v1"), id="a-kubernetes-job"),
        pytest.param(m.command(field="targetObject"), id="target-under-the-go-name"),
    ],
)
def test_only_commands_whose_target_is_a_volcano_job_are_taken(command) -> None:
    """Volcano's informer filter: `target` (JSON) with apiVersion batch.volcano.sh/v1alpha1
    and kind Job; a Command with anything else is not the job controller's."""
    assert Translator(translate.COMMANDS).changed(decode(Command, command), 1.0) is None
    assert not translate.command_for_a_job(decode(Command, command))


def test_only_lavalogs_annotations_reach_the_log() -> None:
    """Extensions are read from `lavalog.io/` annotations; a Job without them encodes as
    before (no field), and other annotations never reach the log."""
    plain = translate.observe_job(decode(Job, m.vcjob()), 1.0)
    assert b"extensions" not in msgspec.json.encode(plain)

    obj = m.vcjob()
    obj["metadata"]["annotations"] = {
        "lavalog.io/exit-codes.0": "In 1,137",
        "kubectl.kubernetes.io/last-applied-configuration": "{}",
    }
    observed = translate.observe_job(decode(Job, obj), 1.0)
    assert observed.extensions == {"lavalog.io/exit-codes.0": "In 1,137"}
