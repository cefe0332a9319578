"""An action about to be executed, with the trigger and policy that led to it."""

from __future__ import annotations

import msgspec

from lavalog.controller.decider.core.triggers import OUT_OF_SYNC, Trigger
from lavalog.events.causes import Cause, describe_cause
from lavalog.events.decisions import PolicyRef
from lavalog.events.volcano.api import Action


# made at nearly every step and holding no reference cycle: not tracked by the cyclic GC
class ActionRequest(msgspec.Struct, frozen=True, gc=False):
    action: str
    trigger: Trigger
    policy: PolicyRef | None = None

    def describe(self) -> str:
        """A one-line why, for status messages and Kubernetes Events."""
        trigger = self.trigger
        delayed = bool(trigger.timer_id)
        return describe_cause(
            Cause(
                trigger.event,
                trigger.pod,
                trigger.task,
                trigger.exit_code,
                self.policy,
                delayed,
                trigger.failure,
            )
        )


#: the request Volcano queues after every phase change: sync in the new phase
SYNC_REQUEST = ActionRequest(action=Action.SYNC_JOB, trigger=OUT_OF_SYNC)
