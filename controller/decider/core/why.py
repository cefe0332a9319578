"""The one line a Job's status says about why it restarts, fails or stops.

Volcano leaves `status.state.reason` and `message` empty; lavalog fills them at each
phase change (docs/semantics.md, difference 21), and where the job restarts, fails or
stops the message says what finally happened, in one line: the event and its pod, the
container, its exit code and Kubernetes' reason (OOMKilled, Evicted), the node, who
disrupted it, the policy that acted, and how many retries are left. The cause itself is
written by `lavalog.events.causes`, as everywhere else.
"""

from __future__ import annotations

from lavalog.controller.admission.disruptions import ANNOTATION as UNCOUNTED_ANNOTATION
from lavalog.controller.admission.restart_backoff import RESTART_ACTIONS
from lavalog.controller.decider.core.request import ActionRequest
from lavalog.controller.decider.core.state import JobState
from lavalog.controller.decider.core.triggers import POD_ENDS


def retries_left(retry_count: int, max_retry: int) -> str:
    """How many more times a job with `retry_count` retries may restart before a failure
    fails it (`maxRetry` is the number of runs: the restart reaching it fails the job)."""
    left = max(max_retry - retry_count - 1, 0)
    count = {0: "no retries", 1: "1 retry"}.get(left, f"{left} retries")
    return f"{count} left (retryCount {retry_count}, maxRetry {max_retry})"


def restart_message(state: JobState, request: ActionRequest, *, counted: bool) -> str:
    """A restart: its cause, and the retries it leaves (or that it counts none)."""
    assert state.spec is not None, "only an admitted job restarts"
    after = state.retry_count + (1 if counted else 0)
    left = retries_left(after, state.spec.max_retry)
    if not counted:
        left = f"not counted as a retry ({UNCOUNTED_ANNOTATION}): {left}"
    return f"{request.describe()}; {left}"


def exhausted_message(state: JobState, acted: ActionRequest | None) -> str:
    """Retries exhausted: how many runs, and the restart that used the last one."""
    assert state.spec is not None, "only an admitted job restarts"
    runs = "1 time" if state.retry_count == 1 else f"{state.retry_count} times"
    message = f"the job ran {runs}; maxRetry is {state.spec.max_retry}"
    if acted is not None and acted.action in RESTART_ACTIONS:
        message += f"; the last {acted.action} was on {acted.describe()}"
    return message


def with_pod_end(message: str, acted: ActionRequest | None) -> str:
    """`message`, and the pod failure or eviction this step acted on, if it did."""
    if acted is None or acted.trigger.event not in POD_ENDS:
        return message
    return f"{message}; last: {acted.describe()}"


def released_message(state: JobState) -> str:
    """Aborted, Completed or Terminated once the pods are gone: and what stopped the job
    (the reason and message it entered Aborting, Completing or Terminating with)."""
    message = "every pod has finished or gone"
    if state.reason and state.message:
        return f"{message}, after {state.reason} on {state.message}"
    if state.reason:
        return f"{message}, after {state.reason}"
    return message
