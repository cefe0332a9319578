"""Exit-code sets (lavalog extension): parsing, admission and policy matching, as tables."""

from __future__ import annotations

from typing import Any

import pytest

from lavalog.controller.admission import Admitted, Rejected, admit_job
from lavalog.controller.admission.exit_codes import parse_set
from lavalog.controller.decider.core.policies import apply_policies
from lavalog.controller.decider.core.triggers import Trigger
from lavalog.events.extensions import ExitCodeSet
from tests.decider.support import worker_spec

RESTART_ON_137 = [{"exitCode": 137, "action": "RestartJob"}]


def failed(code: int) -> Trigger:
    return Trigger(
        event="PodFailed", task="worker", pod="job-worker-0", exit_code=code, job_version=0
    )


# fmt: off
PARSING = [
    ("In 1,2,137", ExitCodeSet("In", (1, 2, 137))),
    ("NotIn 0,3", ExitCodeSet("NotIn", (0, 3))),
    ("  In 137, 2 ", ExitCodeSet("In", (2, 137))),
    ("in 1", "'in 1' must start with \"In\" or \"NotIn\", e.g. \"In 1,2,137\""),
    ("In", "In needs at least one exit code, e.g. 'In' 1,2"),
    ("In 1,x", "'x' is not an exit code: use whole numbers 0 to 255"),
    ("In 256", "'256' is not an exit code: use whole numbers 0 to 255"),
    ("In -1", "'-1' is not an exit code: use whole numbers 0 to 255"),
    ("In 1,1", "'In 1,1' lists an exit code twice"),
    ("In 0,1", "In may not contain 0: exit code 0 is success, not a failure"),
]
# fmt: on


@pytest.mark.parametrize(("text", "expected"), PARSING)
def test_parse_set(text: str, expected: ExitCodeSet | str) -> None:
    assert parse_set(text) == expected


# fmt: off
ADMISSION = [
    ({"lavalog.io/exit-codes.0": "In 1,137"}, RESTART_ON_137, [], None),
    ({"lavalog.io/exit-codes.worker.0": "NotIn 0,3"}, [], RESTART_ON_137, None),
    ({"lavalog.io/other": "x"}, [], [], None),
    ({"lavalog.io/exit-codes.1": "In 137"}, RESTART_ON_137, [], "spec.policies has 1 entries, no index 1"),
    ({"lavalog.io/exit-codes.ps.0": "In 137"}, RESTART_ON_137, [], "the job has no task 'ps'"),
    ({"lavalog.io/exit-codes.worker.0": "In 137"}, RESTART_ON_137, [], "spec.tasks[worker].policies has 0 entries, no index 0"),
    ({"lavalog.io/exit-codes.first": "In 137"}, RESTART_ON_137, [], "'first' must end in a policy index: exit-codes.<index> or <task>.<index>"),
    ({"lavalog.io/exit-codes.0": "In 137"}, [{"event": "PodFailed", "action": "RestartJob"}], [], "the policy has no exitCode: an exit-code set widens a policy's exitCode"),
    ({"lavalog.io/exit-codes.0": "In 1,2"}, RESTART_ON_137, [], "the set must match the policy's own exitCode 137 (so Volcano, which reads only exitCode, does a subset of what lavalog does)"),
    ({"lavalog.io/exit-codes.0": "NotIn 137"}, RESTART_ON_137, [], "the set must match the policy's own exitCode 137 (so Volcano, which reads only exitCode, does a subset of what lavalog does)"),
    ({"lavalog.io/exit-codes.0": "Out 1"}, RESTART_ON_137, [], "'Out 1' must start with \"In\" or \"NotIn\", e.g. \"In 1,2,137\""),
]
# fmt: on


@pytest.mark.parametrize(("annotations", "job_policies", "task_policies", "expected"), ADMISSION)
def test_admission(
    annotations: dict[str, str],
    job_policies: list[dict[str, Any]],
    task_policies: list[dict[str, Any]],
    expected: str | None,
) -> None:
    raw = worker_spec(policies=job_policies, task={"policies": task_policies})

    result = admit_job(raw, annotations)

    if expected is None:
        assert isinstance(result, Admitted)
    else:
        assert isinstance(result, Rejected)
        [name] = annotations
        assert [(e.path, e.message) for e in result.errors] == [
            (f"metadata.annotations[{name}]", expected)
        ]


# fmt: off
MATCHING = [
    ({}, RESTART_ON_137, [], 137, ("RestartJob", ("job", 0))),
    ({}, RESTART_ON_137, [], 1, ("SyncJob", None)),
    ({"lavalog.io/exit-codes.0": "In 1,137"}, RESTART_ON_137, [], 1, ("RestartJob", ("job", 0))),
    ({"lavalog.io/exit-codes.0": "In 1,137"}, RESTART_ON_137, [], 2, ("SyncJob", None)),
    ({"lavalog.io/exit-codes.0": "NotIn 3"}, RESTART_ON_137, [], 42, ("RestartJob", ("job", 0))),
    ({"lavalog.io/exit-codes.0": "NotIn 3"}, RESTART_ON_137, [], 3, ("SyncJob", None)),
    ({"lavalog.io/exit-codes.0": "NotIn 3"}, RESTART_ON_137, [], 0, ("SyncJob", None)),
    ({"lavalog.io/exit-codes.worker.0": "In 1,137"}, [{"exitCode": 1, "action": "AbortJob"}], [{"exitCode": 137, "action": "RestartTask"}], 1, ("RestartTask", ("task", 0))),
    ({"lavalog.io/exit-codes.0": "In 1,137"}, [{"exitCode": 137, "action": "AbortJob"}], [{"exitCode": 137, "action": "RestartTask"}], 1, ("AbortJob", ("job", 0))),
]
# fmt: on


@pytest.mark.parametrize(
    ("annotations", "job_policies", "task_policies", "code", "expected"), MATCHING
)
def test_matching(
    annotations: dict[str, str],
    job_policies: list[dict[str, Any]],
    task_policies: list[dict[str, Any]],
    code: int,
    expected: tuple[str, Any],
) -> None:
    result = admit_job(
        worker_spec(policies=job_policies, task={"policies": task_policies}), annotations
    )
    assert isinstance(result, Admitted)

    resolution = apply_policies(result.spec, 0, failed(code), result.exit_codes)

    policy = resolution.policy
    assert (resolution.action, policy and (policy.level, policy.index)) == expected
