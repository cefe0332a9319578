"""Hypothesis strategies: Job, Pod, PodGroup and Command objects as the API could send
them, then broken: any value swapped for random JSON or for another value of its own
type (which a schema lets through and only admission can judge: a negative `replicas`,
a task name twice), any field dropped (truncated).

Names and namespaces stay valid (the API server keys objects by them); everything else
may be anything JSON can hold.
"""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import strategies as st

from tests.e2e.jobs import job, on, task

Obj = dict[str, Any]

#: any JSON value; small integers, so that a broken `replicas` stays a small one
JSON: st.SearchStrategy[Any] = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-3, 5)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=6,
)

#: a value of the same JSON type as the one it replaces: words of the Job's own
#: vocabulary included, so that a task name can repeat or a policy name an action
SAME_TYPE: st.SearchStrategy[tuple[int, str, bool]] = st.tuples(
    st.integers(-3, 5),
    st.sampled_from(["ps", "worker", "", "PodFailed", "RestartJob"]) | st.text(max_size=8),
    st.booleans(),
)


def _same_type(original: Any, values: tuple[int, str, bool], otherwise: Any) -> Any:
    number, text, flag = values
    if isinstance(original, bool):
        return flag
    if isinstance(original, int):
        return number
    if isinstance(original, str):
        return text
    return otherwise


def base_job(name: str) -> Obj:
    return job(
        name,
        task("ps", 1, "sleep 5"),
        task("worker", 2, "sleep 5; exit 1", policies=[on("PodFailed", "RestartTask")]),
        maxRetry=2,
        policies=[on("PodEvicted", "RestartJob")],
    )


def base_pod(name: str, job_name: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "default",
            "labels": {"volcano.sh/job-name": job_name, "volcano.sh/task-spec": "worker"},
            "annotations": {"volcano.sh/job-version": "0", "volcano.sh/task-index": "0"},
            "ownerReferences": [
                {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": job_name,
                 "uid": "00000000-0000-0000-0000-000000000000", "controller": True}
            ],
        },
        "spec": {"nodeName": "nowhere", "containers": [{"name": "worker", "image": "busybox"}]},
        "status": {
            "phase": "Failed",
            "containerStatuses": [
                {"name": "worker", "restartCount": 0,
                 "state": {"terminated": {"exitCode": 1, "reason": "Error",
                                          "finishedAt": "2026-01-01T00:00:00Z"}}}
            ],
        },
    }  # fmt: skip


def base_podgroup(name: str, job_name: str) -> Obj:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {
            "name": name,
            "namespace": "default",
            "ownerReferences": [
                {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": job_name,
                 "uid": "00000000-0000-0000-0000-000000000000", "controller": True}
            ],
        },
        "spec": {"minMember": 1, "queue": "default"},
        "status": {"phase": "Unknown", "conditions": [{"type": "Unschedulable", "status": "True"}]},
    }  # fmt: skip


def base_command(name: str, job_name: str) -> Obj:
    return {
        "apiVersion": "bus.volcano.sh/v1alpha1",
        "kind": "Command",
        "metadata": {"name": name, "namespace": "default"},
        "action": "AbortJob",
        "targetObject": {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
                         "name": job_name, "uid": "00000000-0000-0000-0000-000000000000"},
    }  # fmt: skip


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in a JSON document, parents before children."""
    found = [prefix] if prefix else []
    if isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _paths(item, (*prefix, index))
    return found


def _protected(path: tuple[Any, ...], keep: tuple[tuple[Any, ...], ...]) -> bool:
    """`path` holds or lies under a kept place."""
    return any(path == k[: len(path)] or path[: len(k)] == k for k in keep)


def broken(
    base: Obj, *, within: tuple[Any, ...] = (), keep: tuple[tuple[Any, ...], ...] = ()
) -> st.SearchStrategy[Obj]:
    """`base` with a few of its values replaced by random JSON or dropped, under `within`
    only (the whole object by default); name, namespace and what is under `keep` stay."""
    keep = (("metadata", "name"), ("metadata", "namespace"), *keep)
    places = [
        p
        for p in _paths(base)
        if p[: len(within)] == within and p != within and not _protected(p, keep)
    ]

    def apply(edits: list[tuple[int, str, Any, tuple[int, str, bool]]]) -> Obj:
        obj = copy.deepcopy(base)
        for index, how, value, typed in edits:
            *parents, last = places[index % len(places)]
            holder: Any = obj
            for step in parents:
                try:
                    holder = holder[step]
                except (KeyError, IndexError, TypeError):
                    holder = None
                    break
            if (isinstance(holder, dict) and last in holder) or (
                isinstance(holder, list) and isinstance(last, int) and last < len(holder)
            ):
                if how == "drop":
                    del holder[last]
                elif how == "same type":
                    holder[last] = _same_type(holder[last], typed, value)
                else:
                    holder[last] = value
        return obj

    how = st.sampled_from(["drop", "random", "same type"])
    edit = st.tuples(st.integers(0, 10_000), how, JSON, SAME_TYPE)
    return st.lists(edit, min_size=1, max_size=4).map(apply)
