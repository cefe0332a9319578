"""What led to an action, in words: the trigger, its pod, task and exit code, the policy.

One function renders a decision's cause everywhere it is shown. The parts are always the
same and always in the same order; what differs is the punctuation around them, because
each text has readers that rely on its form: a Kubernetes Event's message is read by
alerts and by `kubectl describe` beside Volcano's own (`on PodFailed, pod p, ...;
matched task worker policy 0`), a Job's status message and the replay report are prose
(`PodFailed of pod p (exit code 1), matched task worker policy #0`), and the
projections keep the matched policy as a short sortable label (`task:worker#0`).
So each of those is a `CauseStyle` here, and nowhere else writes a cause out. For a
PodFailed or PodEvicted the pod's failure follows the pod: the container whose exit code
it is, the exit code and Kubernetes' reason (`OOMKilled`, `Evicted`), the node, and who
disrupted it (the `DisruptionTarget` reason). Pure.
"""

from __future__ import annotations

from dataclasses import dataclass

from lavalog.events.decisions import ActionDecided, PodFailure, PolicyRef, TimerScheduled

_NO_FAILURE = PodFailure()


@dataclass(frozen=True, slots=True)
class Cause:
    """The parts of a cause; empty ones are left out of every rendering."""

    trigger: str
    pod: str = ""
    task: str = ""
    exit_code: int | None = None
    policy: PolicyRef | None = None
    #: carried out when a policy's timeout ran out, not when the trigger was seen
    delayed: bool = False
    #: how the pod failed or was evicted, when the event is a PodFailed or PodEvicted
    failure: PodFailure | None = None


@dataclass(frozen=True, slots=True)
class CauseStyle:
    """How each part is written (`{}` stands for its value) and what joins the policy."""

    trigger: str
    pod: str
    #: the task is named only when no pod is (the pod names it) unless `task_with_pod`
    task: str
    task_with_pod: bool
    container: str
    #: `{}` is the exit code and the reason: "exit code 137, OOMKilled"
    outcome: str
    node: str
    disruption: str
    #: `{owner}` is `task <name>` or `job`, `{index}` the entry's place in its list
    policy: str
    delayed: str


# Each style gives, in `CauseStyle`'s order: trigger, pod, task, task beside a pod,
# container, exit code and reason, node, disruption, policy, delayed.

#: a Job's status message (and so its timeline's phase reasons): a readable sentence
SENTENCE = CauseStyle(
    "{}", " of pod {}", " of task {}", False, ", container {}", " ({})", " on {}",
    ", disrupted by {}", ", matched {owner} policy #{index}", ", after its timeout",
)  # fmt: skip
#: `lavalog replay`'s action lines, which follow "> <action> "
REPLAYED = CauseStyle(
    "on {}", " of pod {}", "", False, ", container {}", " ({})", " on {}",
    ", disrupted by {}", ", {owner} policy #{index}", " after its timeout",
)  # fmt: skip
#: the detail a Kubernetes Event adds after Volcano's own message
EVENT = CauseStyle(
    "on {}", ", pod {}", ", task {}", True, ", container {}", ", {}", ", node {}",
    ", disruption {}", "; matched {owner} policy {index}", "; delayed by the policy's timeout",
)  # fmt: skip


def cause_of(decision: ActionDecided | TimerScheduled) -> Cause:
    """The cause recorded on an action, or on the timer that delays one (an action that
    names a timer is that timer's, carried out when it fired)."""
    delayed = isinstance(decision, ActionDecided) and bool(decision.timer_id)
    return Cause(
        decision.trigger,
        decision.pod,
        decision.task,
        decision.exit_code,
        decision.policy,
        delayed,
        decision.failure or None,
    )


def describe_cause(cause: Cause, style: CauseStyle = SENTENCE) -> str:
    """The cause as one line of text in `style`."""
    text = style.trigger.format(cause.trigger)
    failure = cause.failure or _NO_FAILURE
    if cause.pod:
        text += style.pod.format(cause.pod)
    if cause.task and style.task and (style.task_with_pod or not cause.pod):
        text += style.task.format(cause.task)
    if failure.container:
        text += style.container.format(failure.container)
    outcome = ", ".join(
        part
        for part in (
            f"exit code {cause.exit_code}" if cause.exit_code is not None else "",
            failure.reason,
        )
        if part
    )
    if outcome:
        text += style.outcome.format(outcome)
    if failure.node:
        text += style.node.format(failure.node)
    if failure.disruption:
        text += style.disruption.format(failure.disruption)
    if cause.policy is not None:
        owner = f"task {cause.policy.task}" if cause.policy.level == "task" else "job"
        text += style.policy.format(owner=owner, index=cause.policy.index)
    if cause.delayed:
        text += style.delayed
    return text


def policy_label(ref: PolicyRef | None) -> str:
    """`task:<name>#<n>` or `job#<n>`: which policy entry matched, short and sortable
    (the projections store and filter on it); empty when none did."""
    if ref is None:
        return ""
    owner = f"task:{ref.task}" if ref.level == "task" else ref.level
    return f"{owner}#{ref.index}"
