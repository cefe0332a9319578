"""One cause, three texts: what each reader of a decision's cause is shown.

The same parts (trigger, pod, task, exit code, matched policy, delay) in the status
message, the replay report and the Kubernetes Event; only the punctuation differs.
"""

from __future__ import annotations

import pytest

from lavalog.events.causes import EVENT, REPLAYED, SENTENCE, Cause, describe_cause, policy_label
from lavalog.events.decisions import PodFailure, PolicyRef

TASK_POLICY = PolicyRef(level="task", index=1, task="worker")


@pytest.mark.parametrize(
    ("style", "text"),
    [
        (
            SENTENCE,
            "PodFailed of pod w-1 (exit code 3), matched task worker policy #1, after its timeout",
        ),
        (
            REPLAYED,
            "on PodFailed of pod w-1 (exit code 3), task worker policy #1 after its timeout",
        ),
        (
            EVENT,
            "on PodFailed, pod w-1, task worker, exit code 3; matched task worker policy 1; "
            "delayed by the policy's timeout",
        ),
    ],
)
def test_every_part_in_each_style(style, text):
    cause = Cause("PodFailed", "w-1", "worker", 3, TASK_POLICY, delayed=True)
    assert describe_cause(cause, style) == text


def test_a_task_event_names_its_task_in_the_status_message_and_a_job_policy_is_the_jobs():
    """TaskCompleted has no pod: the sentence names the task instead."""
    cause = Cause("TaskCompleted", task="ps", policy=PolicyRef(level="job", index=0))
    assert describe_cause(cause) == "TaskCompleted of task ps, matched job policy #0"
    assert describe_cause(cause, REPLAYED) == "on TaskCompleted, job policy #0"
    assert describe_cause(cause, EVENT) == "on TaskCompleted, task ps; matched job policy 0"


@pytest.mark.parametrize(
    ("style", "text"),
    [
        (
            SENTENCE,
            "PodFailed of pod w-1, container trainer (exit code 137, OOMKilled) on node-2,"
            " matched task worker policy #1",
        ),
        (
            REPLAYED,
            "on PodFailed of pod w-1, container trainer (exit code 137, OOMKilled) on node-2,"
            " task worker policy #1",
        ),
        (
            EVENT,
            "on PodFailed, pod w-1, task worker, container trainer, exit code 137, OOMKilled,"
            " node node-2; matched task worker policy 1",
        ),
    ],
)
def test_a_pod_failure_says_which_container_how_and_where(style, text):
    failure = PodFailure(container="trainer", reason="OOMKilled", node="node-2")
    cause = Cause("PodFailed", "w-1", "worker", 137, TASK_POLICY, failure=failure)
    assert describe_cause(cause, style) == text


def test_an_eviction_says_who_disrupted_the_pod():
    failure = PodFailure(reason="Evicted", node="node-1", disruption="TerminationByKubelet")
    cause = Cause("PodEvicted", "w-0", "worker", None, None, failure=failure)
    assert describe_cause(cause) == (
        "PodEvicted of pod w-0 (Evicted) on node-1, disrupted by TerminationByKubelet"
    )
    assert describe_cause(cause, EVENT) == (
        "on PodEvicted, pod w-0, task worker, Evicted, node node-1, disruption TerminationByKubelet"
    )


def test_the_policy_label_is_short_and_sortable():
    assert [policy_label(TASK_POLICY), policy_label(PolicyRef(level="job", index=2))] == [
        "task:worker#1",
        "job#2",
    ]
    assert policy_label(None) == ""
