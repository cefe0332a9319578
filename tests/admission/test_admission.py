"""Admission: one case per Volcano default and rule, plus the cases of Volcano's
admit_job_test.go / mutate_job_test.go worth keeping (their intent, as lavalog tables)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

import msgspec
import pytest

from lavalog.controller.admission import Admitted, Rejected, admit_job, admit_update
from lavalog.events.volcano.api import JobSpec

TEMPLATE = {"spec": {"containers": [{"name": "main", "image": "busybox:1.24"}]}}


def task(name: str = "worker", replicas: Any = 1, **fields: Any) -> dict[str, Any]:
    return {"name": name, "replicas": replicas, "template": TEMPLATE, **fields}


def job(*tasks: Any, **fields: Any) -> dict[str, Any]:
    return {"tasks": list(tasks) or [task()], **fields}


def policy(action: str = "RestartJob", **trigger: Any) -> dict[str, Any]:
    return {"action": action, **trigger}


def admitted(result: Admitted | Rejected) -> JobSpec:
    assert isinstance(result, Admitted), result
    return result.spec


def rejected(result: Admitted | Rejected) -> list[tuple[str, str]]:
    assert isinstance(result, Rejected), result
    return [(error.path, error.message) for error in result.errors]


def assert_errors(result: Admitted | Rejected, expected: list[tuple[str, str]]) -> None:
    """Exactly the expected errors: each path, and a key part of each message."""
    errors = rejected(result)
    assert [path for path, _ in errors] == [path for path, _ in expected], errors
    for (_, message), (_, part) in zip(errors, expected, strict=True):
        assert part in message


# --- defaults (mutate_job.go) ---------------------------------------------------------

DEFAULTS = [
    pytest.param(job(), lambda s: s.queue, "default", id="queue-default"),
    pytest.param(job(queue="gpu"), lambda s: s.queue, "gpu", id="queue-given-kept"),
    pytest.param(job(), lambda s: s.scheduler_name, "volcano", id="scheduler-volcano"),
    pytest.param(job(), lambda s: s.max_retry, 3, id="maxRetry-0-becomes-3"),
    pytest.param(job(maxRetry=5), lambda s: s.max_retry, 5, id="maxRetry-given-kept"),
    pytest.param(
        job({"replicas": 1}, {"replicas": 1}),
        lambda s: [t.name for t in s.tasks],
        ["default0", "default1"],
        id="task-names-by-index",
    ),
    pytest.param(
        job(task(replicas=3)),
        lambda s: s.tasks[0].min_available,
        3,
        id="task-minAvailable-replicas",
    ),
    pytest.param(
        job(task(replicas=3, minAvailable=0)),
        lambda s: s.tasks[0].min_available,
        0,
        id="task-minAvailable-0-kept",
    ),
    pytest.param(job(), lambda s: s.tasks[0].max_retry, 3, id="task-maxRetry-0-becomes-3"),
    # Volcano's min-available design table: job 0, master unset (2), work 1 of 2 -> 3
    pytest.param(
        job(task("master", 2), task("work", 2, minAvailable=1)),
        lambda s: s.min_available,
        3,
        id="job-minAvailable-sum-of-tasks",
    ),
    pytest.param(
        job(task("master", 2), task("work", 2), minAvailable=1),
        lambda s: s.min_available,
        1,
        id="job-minAvailable-given-kept",
    ),
    pytest.param(
        job(task("ps"), task("worker"), plugins={"tensorflow": []}),
        lambda s: s.plugins,
        {"tensorflow": [], "svc": []},
        id="tensorflow-implies-svc",
    ),
    pytest.param(
        job(task("master"), task("worker"), plugins={"pytorch": ["--port=23456"]}),
        lambda s: s.plugins,
        {"pytorch": ["--port=23456"], "svc": []},
        id="pytorch-implies-svc",
    ),
    pytest.param(
        job(task("master"), task("worker"), plugins={"mpi": []}),
        lambda s: s.plugins,
        {"mpi": [], "svc": [], "ssh": []},
        id="mpi-implies-svc-and-ssh",
    ),
    pytest.param(
        job(task("ps"), plugins={"tensorflow": [], "svc": ["--disable-network-policy=true"]}),
        lambda s: s.plugins["svc"],
        ["--disable-network-policy=true"],
        id="implied-plugin-given-kept",
    ),
    pytest.param(
        job(task(template={"spec": {"hostNetwork": True}})),
        lambda s: s.tasks[0].template["spec"]["dnsPolicy"],
        "ClusterFirstWithHostNet",
        id="hostNetwork-dnsPolicy",
    ),
    pytest.param(
        job(task(template={"spec": {"hostNetwork": True, "dnsPolicy": "Default"}})),
        lambda s: s.tasks[0].template["spec"]["dnsPolicy"],
        "Default",
        id="hostNetwork-dnsPolicy-given-kept",
    ),
    pytest.param(
        job(maxRetry=None, policies=None), lambda s: s.max_retry, 3, id="null-means-unset"
    ),
]


@pytest.mark.parametrize(("raw", "read", "expected"), DEFAULTS)
def test_defaults(raw: dict[str, Any], read: Any, expected: Any) -> None:
    assert read(admitted(admit_job(raw))) == expected


def test_defaults_are_idempotent() -> None:
    spec = admitted(admit_job(job(task("master"), task("worker", 3), plugins={"mpi": []})))
    again = admitted(admit_job(msgspec.to_builtins(spec)))
    assert again == spec


def test_caller_data_is_not_changed() -> None:
    raw = job({"replicas": "two"}, {"replicas": 1})
    before = msgspec.json.encode(raw)
    admit_job(raw)
    assert msgspec.json.encode(raw) == before


# --- accepted jobs (admit_job_test.go's valid cases) -----------------------------------

ACCEPTED = [
    pytest.param(
        job(policies=[policy("RestartTask", event="PodEvicted")]),
        id="job-level-RestartTask-on-pod-event",
    ),
    pytest.param(job(task("t1", dependsOn={"name": ["t2"]}), task("t2")), id="valid-dependsOn"),
    pytest.param(
        job(
            task("t1", dependsOn={"name": ["t2", "t3"], "iteration": "any"}), task("t2"), task("t3")
        ),
        id="dependsOn-any",
    ),
    pytest.param(job(task("master"), task("worker"), plugins={"mpi": []}), id="mpi-default-roles"),
    pytest.param(
        job(
            task("launcher"),
            task("node"),
            plugins={"mpi": ["--master=launcher", "--worker", "node"]},
        ),
        id="mpi-named-roles",
    ),
    # Volcano admits these: the master runs without MPI_HOST, or with an empty one
    pytest.param(job(task("master"), plugins={"mpi": []}), id="mpi-worker-missing"),
    pytest.param(
        job(task("master"), task("worker", replicas=0), plugins={"mpi": []}), id="mpi-worker-empty"
    ),
    pytest.param(
        job(
            task("master"),
            task("worker"),
            plugins={
                "pytorch": ["--wait-master-enabled", "--wait-master-timeout=60"],
                "svc": ["--inject-hosts-env=false"],
                "ssh": ["--ssh-port=2222", "--ssh-key-file-path=/home/u/.ssh"],
                "hcclrank": [],
                "env": [],
            },
        ),
        id="every-new-flag",
    ),
    pytest.param(job(task("head"), task("worker"), plugins={"ray": []}), id="ray"),
    pytest.param(
        job(policies=[policy(event="*"), policy("AbortJob", exitCode=3)]),
        id="any-event-beside-exitCode",
    ),
    pytest.param(
        job(task(policies=[policy(event="PodFailed")]), policies=[policy(event="PodFailed")]),
        id="same-event-task-and-job-level",
    ),
    pytest.param(
        job(policies=[policy(event="PodFailed", events=["PodFailed", "PodEvicted"])]),
        id="repeated-event-within-one-policy",
    ),
    pytest.param(job(policies=[policy(event="JobUpdated")]), id="JobUpdated-is-a-policy-event"),
    pytest.param(job(policies=[policy(event="PodPending", timeout="5m")]), id="timeout-5m"),
    pytest.param(job(policies=[policy(exitCode=-1)]), id="negative-exitCode"),
    pytest.param(job(task(replicas=0)), id="zero-replicas"),
    pytest.param(
        job(volumes=[{"mountPath": "/data", "volumeClaimName": "shared-data"}]), id="volume-claim"
    ),
]


@pytest.mark.parametrize("raw", ACCEPTED)
def test_accepted(raw: dict[str, Any]) -> None:
    admitted(admit_job(raw))


# --- rejected jobs: one case per rule ---------------------------------------------------

W = "spec.tasks[0]"
P = "spec.policies[0]"

REJECTED = [
    # decoding
    pytest.param(
        job(task(replicas="two")),
        [(f"{W}.replicas", "must be an integer, not 'two'")],
        id="replicas-not-integer",
    ),
    pytest.param(
        job(task(), "bad", policies=[policy(exitCode="3")], plugins={"svc": "x"}),
        [
            ("spec.tasks[1]", "must be a mapping, not 'bad'"),
            (f"{P}.exitCode", "must be an integer or null, not '3'"),
            ("spec.plugins[svc]", "must be a list, not 'x'"),
        ],
        id="every-decoding-error",
    ),
    pytest.param(
        job(plugins={"mpi": [22]}), [("spec.plugins[mpi][0]", "must be a string")], id="plugin-arg"
    ),
    # counts and bounds
    pytest.param({"tasks": []}, [("spec.tasks", "no tasks")], id="no-tasks"),
    pytest.param(
        job(task(replicas=-1)), [(f"{W}.replicas", "-1 is below 0")], id="replicas-negative"
    ),
    pytest.param(
        job(task(minAvailable=-1)),
        [(f"{W}.minAvailable", "-1 is below 0")],
        id="task-minAvailable-neg",
    ),
    pytest.param(
        job(task(replicas=2, minAvailable=3)),
        [(f"{W}.minAvailable", "3 is more than the task's replicas (2)")],
        id="task-minAvailable-over-replicas",
    ),
    pytest.param(
        job(task(maxRetry=-1)), [(f"{W}.maxRetry", "-1 is below 0")], id="task-maxRetry-neg"
    ),
    pytest.param(
        job(minAvailable=-1), [("spec.minAvailable", "-1 is below 0")], id="job-minAvailable-neg"
    ),
    pytest.param(
        job(task(replicas=1), minAvailable=2),
        [("spec.minAvailable", "2 is more than the total replicas of all tasks (1)")],
        id="job-minAvailable-over-total",
    ),
    pytest.param(job(minSuccess=0), [("spec.minSuccess", "0 is below 1")], id="minSuccess-zero"),
    pytest.param(
        job(task(replicas=2), minSuccess=3),
        [("spec.minSuccess", "3 is more than the total replicas of all tasks (2)")],
        id="minSuccess-over-total",
    ),
    pytest.param(job(maxRetry=-1), [("spec.maxRetry", "-1 is below 0")], id="maxRetry-negative"),
    pytest.param(
        job(ttlSecondsAfterFinished=-1),
        [("spec.ttlSecondsAfterFinished", "-1 is below 0")],
        id="ttl-negative",
    ),
    # names
    pytest.param(
        job(task("Task-1")), [(f"{W}.name", "'Task-1' is not a valid name")], id="task-name-dns"
    ),
    pytest.param(job(task("a" * 64)), [(f"{W}.name", "at most 63")], id="task-name-too-long"),
    pytest.param(
        job(task("duplicated-task-1"), task("duplicated-task-1")),
        [("spec.tasks[1].name", "already the name of spec.tasks[0]")],
        id="duplicate-task-name",
    ),
    pytest.param(
        job(task("default1"), {"replicas": 1}),
        [("spec.tasks[1].name", "'default1' is already the name of spec.tasks[0]")],
        id="default-name-collides",
    ),
    pytest.param(job(queue="Team_A"), [("spec.queue", "not a valid name")], id="queue-name"),
    pytest.param(
        job(priorityClassName="High!"),
        [("spec.priorityClassName", "not a valid name")],
        id="priorityClassName",
    ),
    # policies: triggers
    pytest.param(
        job(policies=[policy("AbortJob", event="PodFailed", exitCode=-1)]),
        [(f"{P}.exitCode", "either events or an exit code")],
        id="event-and-exitCode",
    ),
    pytest.param(
        job(policies=[policy("AbortJob")]), [(P, "no trigger")], id="no-event-no-exitCode"
    ),
    pytest.param(
        job(task(policies=[policy(exitCode=0)])),
        [(f"{W}.policies[0].exitCode", "0 is not an error code")],
        id="exitCode-zero",
    ),
    pytest.param(
        job(policies=[policy(exitCode=1), policy("AbortJob", exitCode=1)]),
        [("spec.policies[1].exitCode", f"exit code 1 already has a policy ({P})")],
        id="duplicate-exitCode",
    ),
    # policies: events
    pytest.param(
        job(policies=[policy("AbortJob", event="someFakeEvent")]),
        [(f"{P}.event", "'someFakeEvent' is not an event; a policy can name *, PodPending")],
        id="unknown-event",
    ),
    *(
        pytest.param(
            job(policies=[policy(event=event)]),
            [(f"{P}.event", f"'{event}' is an internal event")],
            id=f"internal-event-{event}",
        )
        for event in ("OutOfSync", "CommandIssued", "PodRunning")
    ),
    pytest.param(
        job(policies=[policy(events=["PodFailed", ""])]),
        [(f"{P}.events[1]", "'' is not an event")],
        id="empty-event-in-list",
    ),
    pytest.param(
        job(policies=[policy("AbortJob", event="PodFailed"), policy(event="PodFailed")]),
        [("spec.policies[1].event", f"PodFailed already has a policy ({P}.event)")],
        id="duplicate-event",
    ),
    pytest.param(
        job(policies=[policy(events=["PodEvicted", "PodFailed"]), policy(event="PodFailed")]),
        [("spec.policies[1].event", f"PodFailed already has a policy ({P}.events[1])")],
        id="duplicate-event-via-events",
    ),
    pytest.param(
        job(policies=[policy("AbortJob", event="*"), policy(event="PodFailed")]),
        [(f"{P}.event", "'*' matches every event")],
        id="any-with-other-event",
    ),
    pytest.param(
        job(task(policies=[policy("AbortJob", event="*"), policy(event="PodFailed")])),
        [(f"{W}.policies[0].event", "'*' matches every event")],
        id="task-any-with-other-event",
    ),
    # policies: actions
    pytest.param(
        job(policies=[policy("someFakeAction", event="PodEvicted")]),
        [(f"{P}.action", "'someFakeAction' is not an action; a policy can take AbortJob")],
        id="unknown-action",
    ),
    pytest.param(
        job(policies=[policy("SyncJob", event="PodEvicted")]),
        [(f"{P}.action", "'SyncJob' is an internal action")],
        id="internal-action",
    ),
    pytest.param(
        job(policies=[policy("", exitCode=3)]),
        [(f"{P}.action", "required: one of AbortJob")],
        id="missing-action",
    ),
    pytest.param(
        job(policies=[policy("RestartTask", event="Unknown")]),
        [(f"{P}.action", "RestartTask restarts the task or pod an event came from, but Unknown")],
        id="RestartTask-on-Unknown",
    ),
    pytest.param(
        job(task(policies=[policy("RestartPod", events=["PodFailed", "JobUpdated"])])),
        [(f"{W}.policies[0].action", "but JobUpdated is about the whole job")],
        id="RestartPod-on-JobUpdated",
    ),
    # policies: timeout
    pytest.param(
        job(policies=[policy(event="PodEvicted", timeout="5 minutes")]),
        [(f"{P}.timeout", "invalid duration '5 minutes'")],
        id="timeout-not-a-duration",
    ),
    pytest.param(
        job(policies=[policy(event="PodEvicted", timeout="-30s")]),
        [(f"{P}.timeout", "'-30s' is negative")],
        id="timeout-negative",
    ),
    # plugins
    pytest.param(
        job(plugins={"big_plugin": []}),
        [
            (
                "spec.plugins[big_plugin]",
                "unknown plugin; lavalog has env, svc, ssh, tensorflow, pytorch, mpi, ray, hcclrank",
            )
        ],
        id="unknown-plugin",
    ),
    pytest.param(
        job(task("worker", 2), plugins={"mpi": ["--master=launcher"]}),
        [("spec.plugins[mpi]", "the mpi master task 'launcher' does not exist")],
        id="mpi-master-missing",
    ),
    pytest.param(
        job(
            task("master"), task("worker"), plugins={"svc": ["--bogus", "--disable-network-policy"]}
        ),
        [("spec.plugins[svc]", "plugin svc: flag provided but not defined: -bogus (svc takes")],
        id="unknown-plugin-flag",
    ),
    pytest.param(
        job(task("master"), plugins={"pytorch": ["--wait-master-enabled", "true"]}),
        [("spec.plugins[pytorch]", "'true' is not a flag, and Volcano would silently ignore it")],
        id="boolean-flag-takes-no-separate-value",
    ),
    pytest.param(
        job(task("master"), plugins={"ssh": ["--ssh-port=0"]}),
        [("spec.plugins[ssh]", "-ssh-port=0 is not a port number; use 1 to 65535")],
        id="ssh-port-range",
    ),
    pytest.param(
        job(task("ps"), task("worker"), plugins={"tensorflow": ["--port=70000"]}),
        [("spec.plugins[tensorflow]", "plugin tensorflow: -port=70000 is not a port number")],
        id="framework-port-range",
    ),
    pytest.param(
        job(task("worker"), plugins={"ray": []}),
        [("spec.plugins[ray]", "the ray head task 'head' does not exist")],
        id="ray-head-missing",
    ),
    # volumes
    pytest.param(
        job(volumes=[{"mountPath": "", "volumeClaimName": "pvc1"}]),
        [("spec.volumes[0].mountPath", "required")],
        id="volume-mountPath-required",
    ),
    pytest.param(
        job(
            volumes=[
                {"mountPath": "/var", "volumeClaimName": "pvc1"},
                {"mountPath": "/var", "volumeClaimName": "pvc2"},
            ]
        ),
        [("spec.volumes[1].mountPath", "'/var' is already mounted by spec.volumes[0]")],
        id="volume-duplicate-mountPath",
    ),
    pytest.param(
        job(volumes=[{"mountPath": "/var"}]),
        [("spec.volumes[0]", "set volumeClaimName (an existing PVC) or volumeClaim")],
        id="volume-no-claim",
    ),
    pytest.param(
        job(volumes=[{"mountPath": "/var", "volumeClaimName": "pvc1", "volumeClaim": {}}]),
        [("spec.volumes[0].volumeClaimName", "not both")],
        id="volume-claim-and-name",
    ),
    pytest.param(
        job(volumes=[{"mountPath": "/var", "volumeClaimName": "PVC_1"}]),
        [("spec.volumes[0].volumeClaimName", "not a valid name")],
        id="volume-claim-name",
    ),
    # dependsOn
    pytest.param(
        job(task("t1", dependsOn={"name": ["t3"]}), task("t2")),
        [(f"{W}.dependsOn.name[0]", "no task is called 't3'; the tasks are 't1', 't2'")],
        id="dependsOn-unknown-task",
    ),
    pytest.param(
        job(task("t1", dependsOn={"name": ["t1"]})),
        [(f"{W}.dependsOn.name[0]", "cannot depend on itself")],
        id="dependsOn-self",
    ),
    pytest.param(
        job(task("t1", dependsOn={"name": ["t2", "t2"]}), task("t2")),
        [(f"{W}.dependsOn.name[1]", "'t2' is listed twice")],
        id="dependsOn-repeated",
    ),
    pytest.param(
        job(task("t1", dependsOn={"name": ["t2"], "iteration": "some"}), task("t2")),
        [(f"{W}.dependsOn.iteration", "use 'all'")],
        id="dependsOn-iteration",
    ),
    pytest.param(
        job(task("a", dependsOn={"name": ["b"]}), task("b", dependsOn={"name": ["a"]})),
        [("spec.tasks[1].dependsOn.name[0]", "dependency cycle a -> b -> a")],
        id="dependsOn-cycle",
    ),
    pytest.param(
        job(
            task("a", dependsOn={"name": ["b"]}),
            task("b", dependsOn={"name": ["c"]}),
            task("c", dependsOn={"name": ["a"]}),
            task("d", dependsOn={"name": ["a"]}),
        ),
        [("spec.tasks[2].dependsOn.name[0]", "dependency cycle a -> b -> c -> a")],
        id="dependsOn-long-cycle",
    ),
]


@pytest.mark.parametrize(("raw", "expected"), REJECTED)
def test_rejected(raw: dict[str, Any], expected: list[tuple[str, str]]) -> None:
    assert_errors(admit_job(raw), expected)


def test_every_problem_is_reported() -> None:
    raw = job(
        task("Bad_Name", replicas=-1),
        minSuccess=0,
        policies=[policy("Nope", exitCode=0)],
        plugins={"nope": []},
    )
    assert [path for path, _ in rejected(admit_job(raw))] == [
        "spec.minSuccess",
        f"{W}.replicas",
        f"{W}.name",
        f"{P}.action",
        f"{P}.exitCode",
        "spec.plugins[nope]",
    ]


def test_spec_that_is_not_a_mapping() -> None:
    raw = cast(Mapping[str, Any], None)
    assert_errors(admit_job(raw), [("spec", "must be a mapping, not None")])


# --- updates (validateJobUpdate) --------------------------------------------------------


def scaled(replicas: int, min_available: int) -> dict[str, Any]:
    return job(task(replicas=replicas), minAvailable=min_available)


OLD = admitted(admit_job(scaled(5, 5)))

UPDATES_ACCEPTED = [
    pytest.param(scaled(6, 5), lambda s: (s.tasks[0].replicas, s.min_available), (6, 5), id="up"),
    pytest.param(scaled(4, 3), lambda s: (s.tasks[0].replicas, s.min_available), (4, 3), id="down"),
    pytest.param(
        job(task(replicas=7)),
        lambda s: (s.min_available, s.tasks[0].min_available),
        (7, 7),
        id="derived-minimums-follow",
    ),
    pytest.param(
        job(task(replicas=5, maxRetry=9), minAvailable=5, maxRetry=4),
        lambda s: (s.max_retry, s.tasks[0].max_retry),
        (4, 9),
        id="maxRetry",
    ),
    pytest.param(
        {**scaled(5, 5), "priorityClassName": "high"},
        lambda s: s.priority_class_name,
        "high",
        id="priorityClassName",
    ),
    pytest.param(msgspec.to_builtins(OLD), lambda s: s, OLD, id="stored-spec-unchanged"),
]


@pytest.mark.parametrize(("raw", "read", "expected"), UPDATES_ACCEPTED)
def test_update_accepted(raw: dict[str, Any], read: Any, expected: Any) -> None:
    assert read(admitted(admit_update(OLD, raw))) == expected


UPDATES_REJECTED = [
    pytest.param(
        scaled(4, 5),
        [("spec.minAvailable", "5 is more than the total replicas of all tasks (4)")],
        id="scale-below-minAvailable",
    ),
    pytest.param(scaled(4, -1), [("spec.minAvailable", "-1 is below 0")], id="minAvailable-neg"),
    pytest.param(
        job(task(replicas=-1), minAvailable=0),
        [(f"{W}.replicas", "-1 is below 0")],
        id="replicas-neg",
    ),
    pytest.param(
        job(task(replicas=5), task("ps"), minAvailable=5),
        [("spec.tasks", "may not add or remove tasks (1 before, 2 now)")],
        id="add-task",
    ),
    pytest.param(
        job(task("trainer", 5), minAvailable=5),
        [(f"{W}.name", "may not change on an existing job; only minAvailable")],
        id="rename-task",
    ),
    pytest.param(
        job(task(replicas=5, template={"spec": {}}), minAvailable=5),
        [(f"{W}.template", "may not change")],
        id="change-template",
    ),
    pytest.param(
        {**scaled(5, 5), "queue": "other"}, [("spec.queue", "may not change")], id="change-queue"
    ),
    pytest.param(
        {**scaled(5, 5), "policies": [policy(event="PodFailed")]},
        [("spec.policies", "may not change")],
        id="change-policies",
    ),
    pytest.param(
        scaled(5, 5) | {"tasks": [task(replicas="5")]},
        [(f"{W}.replicas", "must be an integer, not '5'")],
        id="decoding-error",
    ),
]


@pytest.mark.parametrize(("raw", "expected"), UPDATES_REJECTED)
def test_update_rejected(raw: dict[str, Any], expected: list[tuple[str, str]]) -> None:
    assert_errors(admit_update(OLD, raw), expected)


def test_update_ignores_claim_names_the_controller_filled_in() -> None:
    volume = {"mountPath": "/data", "volumeClaim": {"accessModes": ["ReadWriteOnce"]}}
    old = admitted(admit_job(job(volumes=[volume])))
    named = {**volume, "volumeClaimName": "job-data-x7k2"}
    admitted(admit_update(old, job(volumes=[named])))


def test_a_job_first_seen_with_the_claim_name_its_controller_gave_is_admitted() -> None:
    """A Job Volcano (or lavalog, before a restart from an empty log) ran has its
    generated claim name beside `volumeClaim`; a user's own name there is refused."""
    volume = {"mountPath": "/data", "volumeClaim": {"accessModes": ["ReadWriteOnce"]}}
    admitted(admit_job(job(volumes=[{**volume, "volumeClaimName": "train-pvc-0a1b2c3d4e5f"}])))
    assert_errors(
        admit_job(job(volumes=[{**volume, "volumeClaimName": "my-data"}])),
        [("spec.volumes[0].volumeClaimName", "not both")],
    )
