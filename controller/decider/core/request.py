"""An action about to be executed, with the trigger and policy that led to it."""

from __future__ import annotations

import msgspec

from controller.decider.core.triggers import OUT_OF_SYNC, Trigger
from events.decisions import PolicyRef
from events.volcano.api import Action


class ActionRequest(msgspec.Struct, frozen=True):
    action: str
    trigger: Trigger
    policy: PolicyRef | None = None

    def describe(self) -> str:
        """A one-line why, for status messages and Kubernetes Events."""
        trigger = self.trigger
        text = trigger.event
        if trigger.pod:
            text += f" of pod {trigger.pod}"
        elif trigger.task:
            text += f" of task {trigger.task}"
        if trigger.exit_code is not None:
            text += f" (exit code {trigger.exit_code})"
        if self.policy is not None:
            where = f"task {self.policy.task}" if self.policy.level == "task" else "job"
            text += f", matched {where} policy #{self.policy.index}"
        if trigger.timer_id:
            text += ", after its timeout"
        return text


#: the request Volcano queues after every phase change: sync in the new phase
SYNC_REQUEST = ActionRequest(action=Action.SYNC_JOB, trigger=OUT_OF_SYNC)
