"""One handler per job phase, as Volcano's `pkg/controllers/job/state/` has one file each.

A handler receives the action chosen for the current event and does what that phase
does with it: kill, sync, or nothing but tidying up. Part of the decider's core: must
not import I/O libraries or the decider's service.
"""

from __future__ import annotations

from collections.abc import Callable

from lavalog.controller.decider.core.operations import UpdateStatus
from lavalog.controller.decider.core.phases import finished, pending, releasing, restarting, running
from lavalog.controller.decider.core.request import ActionRequest
from lavalog.controller.decider.core.step import Step
from lavalog.events.volcano.api import JobPhase

Handler = Callable[[Step, ActionRequest], None]

HANDLERS: dict[str, Handler] = {
    "": pending.handle,  # not initiated yet: Volcano's default state is Pending
    JobPhase.PENDING: pending.handle,
    JobPhase.RUNNING: running.handle,
    JobPhase.RESTARTING: restarting.handle,
    JobPhase.ABORTING: releasing.aborting,
    JobPhase.ABORTED: finished.aborted,
    JobPhase.COMPLETING: releasing.completing,
    JobPhase.TERMINATING: releasing.terminating,
    JobPhase.COMPLETED: finished.finished,
    JobPhase.FAILED: finished.finished,
    JobPhase.TERMINATED: finished.finished,
}

#: the status rule of each phase whose handler answers a plain sync (an event no policy
#: matches, no action chosen) with `operations.sync_job` and that rule; Restarting's first
#: kills any pod of an older version left running (`restarting.runs_an_older_version`)
SYNC_RULES: dict[str, UpdateStatus] = {
    JobPhase.PENDING: pending.update,
    JobPhase.RUNNING: running.update,
    JobPhase.RESTARTING: restarting.update,
}
