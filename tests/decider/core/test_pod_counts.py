"""The pod counts a state keeps are the counts of its pods, however it got there.

`evolve` moves the counts with each change to the pods instead of counting them again; the
property: after any fold, of an observation or of a decision, a state's counts equal its
pods counted afresh, along random logs that take pods through every phase, deletion,
kill, replacement, relist and refused create, jobs taken over from Volcano (pods seen
before their Job), settled jobs thawed again and states restored from snapshots.
"""

from __future__ import annotations

from typing import Any

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from lavalog.controller.decider.core import evolve, initial_state, step
from lavalog.controller.decider.core.counts import count_pods, counts_of
from lavalog.controller.decider.core.settled import freeze, thaw
from lavalog.controller.decider.core.snapshots import (
    JobSnapshot,
    decode_record,
    encode_record,
    restore,
)
from lavalog.controller.decider.core.state import JobState
from lavalog.events.decisions import PodsCreate
from lavalog.events.observations import CreateFailed, JobObserved
from lavalog.events.volcano.api import JobState as StatusState
from lavalog.events.volcano.api import JobStatus
from tests.decider.core.test_properties import PODS, SPEC, play, steps
from tests.scenarios import JobScript

#: what only this test adds to the moves of `test_properties`
more_steps = st.one_of(
    steps,
    st.tuples(st.just("listed"), st.lists(st.sampled_from(PODS), unique=True, max_size=3)),
    st.tuples(st.just("incarnation"), st.sampled_from(PODS)),
    st.tuples(st.just("going"), st.sampled_from(PODS), st.sampled_from(["Running", "Failed"])),
    st.tuples(st.just("refused"), st.lists(st.sampled_from(PODS), min_size=1, unique=True)),
)
#: between two steps the state is kept, frozen and thawed, or written and read as a snapshot
round_trips = st.sampled_from(["kept", "settled", "snapshot"])


def log_of(moves: list[tuple[Any, ...]], *, taken_over: bool) -> JobScript:
    """The moves as a log; `taken_over`: the Job carries a status Volcano wrote, and the
    first pods are seen before it (the watchers list the kinds in parallel)."""
    script = JobScript("prop", SPEC)
    if not taken_over:
        script.submit()
    else:
        for task, index in PODS[:2]:
            script.pod(task, index, "Running", version=1)
        script.submit()
        first = script.events[-1]
        assert isinstance(first, JobObserved)
        status = JobStatus(state=StatusState(phase="Running"), version=1, retry_count=1)
        script.events[-1] = msgspec.structs.replace(first, status=status)
        script.listed(*PODS[:2])
    for move in moves:
        kind = move[0]
        if kind == "listed":
            script.listed(*move[1])
        elif kind == "incarnation":
            script.new_incarnation(*move[1])
        elif kind == "going":
            (task, index), phase = move[1], move[2]
            script.pod(task, index, phase, deleting=True)
        elif kind == "refused":
            names = tuple(script.pod_name(task, index) for task, index in move[1])
            script.observe(
                CreateFailed,
                decision=f"{script.last.id}#0",
                object_kind="Pod",
                names=names,
                job_version=0,
            )
        else:
            play(script, move)
    return script


def assert_counted(state: JobState) -> None:
    counted = count_pods(state.pods.values(), state.replicas.by_task)
    if state.pods:
        assert state.counts == counted  # kept, not counted on demand
    counts = counts_of(state)
    assert counts == counted
    # the phases in order, whatever order the pods changed in (the status is written so)
    assert all(list(phases) == sorted(phases) for phases in counts.by_task.values())


def round_trip(state: JobState, how: str) -> JobState:
    if how == "settled":
        return thaw(freeze(state))
    if how == "snapshot":
        record = decode_record(encode_record(JobSnapshot(offset=0, state=state)))
        assert isinstance(record, JobSnapshot)
        return record.state
    return state


@settings(max_examples=300, deadline=None)
@given(st.lists(more_steps, max_size=40), st.booleans(), st.lists(round_trips, max_size=40))
def test_kept_counts_equal_the_pods_counted_afresh_after_every_fold(moves, taken_over, trips):
    events = log_of(moves, taken_over=taken_over).events
    state = initial_state(events[0].key)
    for n, observation in enumerate(events):
        stepped, decisions = step(state, observation)
        folded = evolve(state, observation)
        assert_counted(folded)
        for decision in decisions:
            folded = evolve(folded, decision)
            assert_counted(folded)
        assert stepped == folded
        state = round_trip(stepped, trips[n] if n < len(trips) else "kept")
        assert_counted(state)


def _without_counts(state: JobState) -> bytes:
    """A snapshot as a decider that kept no counts wrote it."""
    record = msgspec.json.decode(encode_record(JobSnapshot(offset=7, state=state)))
    del record["state"]["counts"]
    return msgspec.json.encode(record)


def test_a_snapshot_written_before_counts_were_kept_is_counted_and_decides_the_same():
    script = JobScript("old", SPEC).submit().podgroup("Inqueue")
    script.pods("ps", 1, "Running").pods("worker", 2, "Running")
    state = initial_state(script.key)
    for observation in script.events:
        state, _ = step(state, observation)
    assert state.counts is not None and state.counts.running == 3

    (old,) = restore([(script.key, _without_counts(state))]).states.values()
    assert old.counts is None
    assert counts_of(old) == state.counts

    failed = script.pod("worker", 1, "Failed", exit_code=1).last
    after_old, decided_old = step(old, failed)
    after_new, decided_new = step(state, failed)
    assert decided_old == decided_new
    recounted = count_pods(after_new.pods.values(), after_new.replicas.by_task)
    assert after_old.counts == after_new.counts == recounted


def test_a_change_the_counts_do_not_see_keeps_the_same_counts():
    script = JobScript("same", SPEC).submit().podgroup("Inqueue").pods("worker", 2, "Running")
    state = initial_state(script.key)
    for observation in script.events:
        state, _ = step(state, observation)
    moved = script.pod("worker", 0, "Running", restarts=1, node="node-1").last

    after = evolve(state, moved)

    assert after.pods != state.pods
    assert after.counts is state.counts


def test_pods_asked_for_count_as_pending_until_seen():
    script = JobScript("asked", SPEC).submit()
    state = initial_state(script.key)
    for observation in script.podgroup("Inqueue").events:
        state, decisions = step(state, observation)
    made = sum(len(d.pods) for d in decisions if isinstance(d, PodsCreate))
    assert made == 3
    assert state.counts is not None
    assert (state.counts.pending, state.counts.by_task) == (
        3,
        {"ps": {"Pending": 1}, "worker": {"Pending": 2}},
    )
