"""One job name, deleted and created again (new uids), valid and invalid specs, some
taken over from Volcano with facts arriving before their Job: the decisions depend on
the log alone.

Each log is decided (a) in one pass by the pure decider, (b) by the decider service's
partition logic with snapshots (the real encoding) and a crash and restore at arbitrary
points, and (c) recomputed by `lavalog audit` against what (b) recorded. All three must
agree, decision for decision.
"""

from __future__ import annotations

from typing import Any

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from lavalog.controller.decider.core import evolve, initial_state, replay, step
from lavalog.controller.decider.core.partition import PartitionDecider
from lavalog.controller.decider.core.snapshots import Restored, encode_record, restore
from lavalog.controller.decider.core.state import forgettable
from lavalog.events.decisions import AnyDecision
from lavalog.events.observations import AnyObservation
from lavalog.events.volcano.api import JobState, JobStatus
from lavalog.projections.core.audit import audit
from tests.scenarios import INCARNATION_IDS, JobScript

TASK = {"name": "w", "replicas": 2, "template": {"spec": {"containers": [{"name": "c"}]}}}
VALID: dict[str, Any] = {
    "minAvailable": 2,
    "maxRetry": 2,
    "policies": [{"event": "PodFailed", "action": "RestartJob"}],
    "tasks": [TASK],
}
SCALED: dict[str, Any] = {**VALID, "tasks": [{**TASK, "replicas": 3}]}
SPECS = {
    "valid": VALID,
    "scaled": SCALED,
    "duplicate-tasks": {**VALID, "tasks": [TASK, TASK]},
    "no-tasks": {"minAvailable": 1, "tasks": []},
}

moves = st.one_of(
    st.tuples(
        st.just("pod"),
        st.integers(0, 2),
        st.sampled_from(["Pending", "Running", "Succeeded", "Failed"]),
        st.integers(0, 2),
    ),
    st.tuples(st.just("podgroup"), st.sampled_from(["Inqueue", "Running", "Unknown"])),
    st.tuples(st.just("pod_deleted"), st.integers(0, 2)),
    st.tuples(st.just("update"), st.sampled_from(sorted(SPECS))),
    st.tuples(st.just("command"), st.sampled_from(["AbortJob", "ResumeJob"])),
    st.tuples(st.just("listed"), st.integers(0, 2)),
)
incarnations = st.lists(
    st.tuples(
        st.sampled_from(sorted(SPECS)),
        # taken over from Volcano: the status it left, and how many facts come before it
        st.sampled_from([None, "Running", "Restarting", "Completing", "Completed"]),
        st.integers(0, 3),
        st.lists(moves, max_size=8),
        st.booleans(),
    ),
    min_size=1,
    max_size=4,
)
Plan = list[tuple[str, str | None, int, list[tuple[Any, ...]], bool]]


def log_of(plan: Plan) -> list[AnyObservation]:
    """Incarnations of `default/reuse` one after another, each deleted unless the last
    says otherwise; the old one's late pod news may still arrive after the new one exists.
    A Job taken over carries Volcano's status, and facts about it may come before it."""
    events: list[AnyObservation] = []
    time = 1_000.0
    for number, (spec, phase, early, steps, deleted) in enumerate(plan):
        script = JobScript(
            "reuse", SPECS[spec], uid=f"uid-{number}", start=time, ids=INCARNATION_IDS
        ).submit()
        if phase is not None:
            status = JobStatus(state=JobState(phase=phase), version=1, retry_count=1)
            script.events[0] = msgspec.structs.replace(script.events[0], status=status)
        for move in steps:
            if move[0] == "pod":
                _, index, phase, version = move
                script.pod(
                    "w", index, phase, version=version, exit_code=1 if phase == "Failed" else None
                )
            elif move[0] == "podgroup":
                script.podgroup(move[1])
            elif move[0] == "pod_deleted":
                script.pod_deleted("w", move[1])
            elif move[0] == "update":
                script.submit(SPECS[move[1]])
            elif move[0] == "listed":
                script.listed(*[("w", index) for index in range(move[1])])
            else:
                script.command(move[1])
        if deleted or number < len(plan) - 1:
            script.delete().pod("w", 1, "Running", deleting=True)
            script.pod_deleted("w", 0, phase="Succeeded")
        job, *rest = script.events
        events += [*rest[:early], job, *rest[early:]]
        time = script.time
    return events


def one_pass(events: list[AnyObservation]) -> list[AnyDecision]:
    """The pure decider's decisions, each step checked to be the fold of `evolve` over
    its observation and decisions (what rebuilding state from the log relies on)."""
    state = initial_state(events[0].key)
    everything: list[AnyDecision] = []
    for observation in events:
        stepped, decisions = step(state, observation)
        folded = evolve(state, observation)
        for decision in decisions:
            folded = evolve(folded, decision)
        assert stepped == folded
        state = initial_state(state.key) if forgettable(stepped) else stepped
        everything += decisions
    assert everything == [d for _, ds in replay(events) for d in ds]
    return everything


def with_restart(
    events: list[AnyObservation], snapshot_every: int, crash_at: int
) -> list[AnyDecision]:
    """Decided by the service's partition logic: snapshots every few events, a crash at
    `crash_at` (what is in memory is lost), then a restore from the snapshot records."""
    partition = PartitionDecider(Restored(), committed=0)
    produced: list[AnyDecision] = []
    written: list[tuple[str, bytes | None]] = []
    for offset, event in enumerate(events[:crash_at]):
        produced += partition.apply(offset, event)
        if (offset + 1) % snapshot_every == 0:
            records = partition.snapshot(offset + 1)
            written += [(k, None if r is None else encode_record(r)) for k, r in records]
    restored = restore(written)
    partition = PartitionDecider(restored, committed=crash_at)
    for offset in range(restored.checkpoint, len(events)):
        produced += partition.apply(offset, events[offset])
    return produced


@settings(max_examples=300, deadline=None)
@given(plan=incarnations, snapshot_every=st.integers(1, 12), crash=st.floats(0, 1))
def test_same_log_same_decisions_with_or_without_a_restart_and_audit_agrees(
    plan, snapshot_every, crash
):
    events = log_of(plan)
    crash_at = round(crash * len(events))

    expected = one_pass(events)
    recorded = with_restart(events, snapshot_every, crash_at)

    assert recorded == expected
    report = audit([*events, *recorded], replay)
    assert report.ok, report.differences
    assert report.recomputed == len(expected)
