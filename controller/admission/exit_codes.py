"""Exit-code sets: a lavalog extension that widens a policy's `exitCode` to a set.

Volcano matches one exit code per policy; Kubernetes' podFailurePolicy `onExitCodes`
matches `In` or `NotIn` a list. lavalog reads the set from a Job annotation so the spec
stays plain Volcano YAML (Volcano ignores the annotation and keeps matching the single
code):

    lavalog.io/exit-codes.<index>:        "In 1,2,137"   # spec.policies[<index>]
    lavalog.io/exit-codes.<task>.<index>: "NotIn 0,3"    # spec.tasks[<task>].policies[<index>]

The addressed policy must have an `exitCode`, which the set must agree with (`In`
contains it, `NotIn` does not), so Volcano's behaviour is always a subset of lavalog's.
docs/semantics.md, "Extensions", has the grammar.
"""

from __future__ import annotations

from collections.abc import Mapping

from lavalog.controller.admission.annotations import annotation, annotation_error
from lavalog.events.extensions import ExitCodeSet
from lavalog.events.volcano.api import FieldError, JobSpec, LifecyclePolicy

PREFIX = annotation("exit-codes.")
OPERATORS = ("In", "NotIn")
#: container exit codes are one byte
MAX_CODE = 255


def policy_key(task: str | None, index: int) -> str:
    """The annotation suffix addressing a job policy (`0`) or a task's (`worker.0`)."""
    return f"{task}.{index}" if task else str(index)


def parse_set(text: str) -> ExitCodeSet | str:
    """An ExitCodeSet, or what is wrong with `text` (a sentence for an error message)."""
    operator, _, rest = text.strip().partition(" ")
    if operator not in OPERATORS:
        return f'{text!r} must start with "In" or "NotIn", e.g. "In 1,2,137"'
    items = [item.strip() for item in rest.split(",")] if rest.strip() else []
    if not items:
        return f"{operator} needs at least one exit code, e.g. {operator!r} 1,2"
    values: list[int] = []
    for item in items:
        if not item.isdigit() or int(item) > MAX_CODE:
            return f"{item!r} is not an exit code: use whole numbers 0 to {MAX_CODE}"
        values.append(int(item))
    if len(set(values)) != len(values):
        return f"{text!r} lists an exit code twice"
    if operator == "In" and 0 in values:
        return "In may not contain 0: exit code 0 is success, not a failure"
    return ExitCodeSet(operator=operator, values=tuple(sorted(values)))


def exit_code_sets(
    spec: JobSpec, annotations: Mapping[str, str]
) -> tuple[dict[str, ExitCodeSet], list[FieldError]]:
    """The exit-code sets the annotations give, keyed by `policy_key`, and every problem."""
    sets: dict[str, ExitCodeSet] = {}
    errors: list[FieldError] = []
    for name in sorted(annotations):
        if name.startswith(PREFIX):
            problem = _check(spec, name, annotations[name], sets)
            if problem is not None:
                errors.append(annotation_error(name, problem))
    return sets, errors


def _check(spec: JobSpec, name: str, text: str, sets: dict[str, ExitCodeSet]) -> str | None:
    key = name.removeprefix(PREFIX)
    located = _policy(spec, key)
    if isinstance(located, str):
        return located
    parsed = parse_set(text)
    if isinstance(parsed, str):
        return parsed
    code = located.exit_code
    if code is None:
        return "the policy has no exitCode: an exit-code set widens a policy's exitCode"
    if parsed.matches(code) is False:
        return (
            f"the set must match the policy's own exitCode {code} "
            "(so Volcano, which reads only exitCode, does a subset of what lavalog does)"
        )
    sets[key] = parsed
    return None


def _policy(spec: JobSpec, key: str) -> LifecyclePolicy | str:
    task_name, _, index_text = key.rpartition(".")
    if not index_text.isdigit():
        return f"{key!r} must end in a policy index: exit-codes.<index> or <task>.<index>"
    index = int(index_text)
    if task_name:
        task = spec.task(task_name)
        if task is None:
            return f"the job has no task {task_name!r}"
        policies, where = task.policies, f"spec.tasks[{task_name}].policies"
    else:
        policies, where = spec.policies, "spec.policies"
    if index >= len(policies):
        return f"{where} has {len(policies)} entries, no index {index}"
    return policies[index]
