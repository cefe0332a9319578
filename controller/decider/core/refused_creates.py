"""What a refused create changes in a job's state: the refused objects are forgotten, so
that the next sync asks for them again, and the refusals in a row are counted (`requeue`
decides on them, as Volcano's `handleJobError`).

The actuator publishes each refusal (`CreateFailed`). The row ends when a pod the decider
asked for appears (Volcano forgets a request's failures when its sync succeeds), and
with the job version. Every refusal counts, whichever sync made it: Volcano counts per
queued request, and a job whose creates keep failing reaches its limit with either count.
"""

from __future__ import annotations

from msgspec.structs import replace

from lavalog.controller.decider.core.counts import with_pods
from lavalog.controller.decider.core.state import JobState, RefusedCreates
from lavalog.events.observations import CreateFailed

#: refusals a row remembers (Volcano's `--max-requeue-num` default, and one more)
MEMORY = 16
_POD = "Pod"


def fold(state: JobState, event: CreateFailed) -> JobState:
    """Forget the refused objects (asked for, never seen) and count the refusal."""
    before = state.refused_creates
    if before is not None and event.decision in before.decisions:
        return state  # the same refusal published again (the actuator repeated a decision)
    if event.object_kind == _POD:
        asked = {
            name: pod
            for name, pod in state.pods.items()
            if name in event.names and not pod.uid and pod.version == event.job_version
        }
        if asked:
            pods = {name: pod for name, pod in state.pods.items() if name not in asked}
            state = with_pods(state, pods, [(pod, None) for pod in asked.values()])
        if event.job_version != state.version:
            return state  # of an earlier run: nothing to retry
    elif state.podgroup is not None and not state.podgroup.uid:
        # the PodGroup (or a claim it waited for) was never made
        state = replace(state, podgroup=None)
    same_row = before is not None and before.version == state.version
    count, decisions = (before.count, before.decisions) if before and same_row else (0, ())
    refused = RefusedCreates(
        version=state.version,
        count=count + 1,
        decisions=(*decisions, event.decision)[-MEMORY:],
        message=event.message,
    )
    return replace(state, refused_creates=refused)


def created(state: JobState) -> JobState:
    """A pod the decider asked for has appeared: the refusals in a row are over."""
    return state if state.refused_creates is None else replace(state, refused_creates=None)
