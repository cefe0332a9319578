"""Properties over arbitrary observation sequences (hypothesis).

For any sequence: the retry count never exceeds maxRetry, a finished job never gets
pods created or replaced, a step that ends a run kills its pods only after the status
that ends it (unless it makes pods too), replaying the same sequence gives identical decisions, and `step` equals
folding `evolve` over the observation and its decisions (spec updates, admitted or
rejected, included: the admission is one of them). Folding an observation never admits
a spec (only the recorded verdict does), and a fact that leaves the state as it was
decides nothing even when every rule runs on it (which `step` spares itself), nor does a
pod fact that changes only what no rule reads (`no_news`); a routine pod fact decides
byte for byte as every rule does (`routine`). A job held
as a compact record once it settled decides exactly as one kept in memory.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from lavalog.controller.decider.core import evolve, initial_state, replay, step
from lavalog.controller.decider.core.flow import step_by_rules
from lavalog.controller.decider.core.no_news import no_news
from lavalog.controller.decider.core.settled import JobStates, freeze, settled, thaw
from lavalog.controller.decider.core.state import JobState
from lavalog.events.decisions import (
    AnyDecision,
    JobAdmitted,
    JobRejected,
    PodsCreate,
    PodsKill,
    PodsReplace,
    StatusWrite,
)
from lavalog.events.observations import JobObserved, PodObserved
from lavalog.events.volcano.api import FINISHED_PHASES, run_over
from tests.decider.core.test_routine import encoded, routine_step
from tests.scenarios import JobScript

SPEC: dict[str, Any] = {
    "minAvailable": 2,
    "maxRetry": 2,
    "policies": [
        {"event": "PodEvicted", "action": "RestartJob"},
        {"exitCode": 3, "action": "AbortJob"},
        {"event": "Unknown", "action": "RestartJob", "timeout": "30s"},
    ],
    "tasks": [
        {
            "name": "ps",
            "replicas": 1,
            "template": {"spec": {"containers": [{"name": "c", "image": "i"}]}},
        },
        {
            "name": "worker",
            "replicas": 2,
            "policies": [{"event": "PodFailed", "action": "RestartTask"}],
            "template": {"spec": {"containers": [{"name": "c", "image": "i"}]}},
        },
    ],
}

PODS = [("ps", 0), ("worker", 0), ("worker", 1)]
steps = st.one_of(
    st.tuples(
        st.just("pod"),
        st.sampled_from(PODS),
        st.sampled_from(["Pending", "Running", "Succeeded", "Failed"]),
        st.integers(0, 3),
        st.sampled_from([None, 1, 3]),
    ),
    st.tuples(st.just("deleted"), st.sampled_from(PODS), st.integers(0, 3)),
    st.tuples(st.just("podgroup"), st.sampled_from(["Inqueue", "Running", "Unknown"])),
    st.tuples(st.just("command"), st.sampled_from(["AbortJob", "ResumeJob", "RestartJob"])),
    st.tuples(st.just("wait"), st.integers(1, 60)),
    # a new generation of the spec: the workers scaled (admitted), or the ps task's
    # template changed too (a change admission forbids)
    st.tuples(st.just("update"), st.integers(0, 3), st.booleans()),
    # the latest fact published once more (a relist, a status write's echo)
    st.tuples(st.just("again")),
)


def updated(workers: int, forbidden: bool) -> dict[str, Any]:
    ps, worker = SPEC["tasks"]
    if forbidden:
        ps = {**ps, "template": {"spec": {"containers": [{"name": "c", "image": "other"}]}}}
    return {**SPEC, "tasks": [ps, {**worker, "replicas": workers}]}


def script_of(moves: list[tuple[Any, ...]], spec: dict[str, Any] = SPEC) -> JobScript:
    script = JobScript("prop", spec).submit()
    for move in moves:
        play(script, move)
    return script


def play(script: JobScript, move: tuple[Any, ...]) -> None:
    """Add what one move of `steps` observes to `script`."""
    kind = move[0]
    if kind == "pod":
        (task, index), phase, version, code = move[1], move[2], move[3], move[4]
        script.pod(
            task, index, phase, version=version, exit_code=code if phase == "Failed" else None
        )
    elif kind == "deleted":
        (task, index), version = move[1], move[2]
        script.pod_deleted(task, index, version=version)
    elif kind == "podgroup":
        script.podgroup(move[1])
    elif kind == "command":
        script.command(move[1])
    elif kind == "update":
        script.submit(updated(move[1], move[2]))
    elif kind == "again":
        script.again()
    else:
        script.after(move[1])


@settings(max_examples=300, deadline=None)
@given(st.lists(steps, max_size=40))
def test_lifecycle_invariants(moves):
    script = script_of(moves)
    states: dict[str, Any] = {}
    finished = False
    for _, decisions in replay(script.events, states):
        if finished:
            assert not any(isinstance(d, PodsCreate | PodsReplace) for d in decisions)
        state = states[script.key]
        assert state.retry_count <= SPEC["maxRetry"]
        finished = state.phase in FINISHED_PHASES


def _ends_the_run(decision: AnyDecision, version: int) -> bool:
    """A status write after which the actuator makes no pod of `version`."""
    return isinstance(decision, StatusWrite) and (
        run_over(decision.status.version, decision.status.state.phase, version)
    )


@settings(max_examples=300, deadline=None)
@given(st.lists(steps, max_size=40))
def test_a_step_that_ends_a_run_kills_its_pods_after_the_status_that_ends_it(moves):
    """So that a create of the run carried out again after a crash, between the kill and
    that status, cannot make a killed pod anew."""
    script = script_of(moves)
    states: dict[str, Any] = {}
    version = 0
    for _, decisions in replay(script.events, states):
        ends = [at for at, d in enumerate(decisions) if _ends_the_run(d, version)]
        if ends and not any(isinstance(d, PodsCreate | PodsReplace) for d in decisions):
            kills = [at for at, d in enumerate(decisions) if isinstance(d, PodsKill)]
            assert all(at > ends[0] for at in kills)
        version = states[script.key].version


@settings(max_examples=200, deadline=None)
@given(st.lists(steps, max_size=40))
def test_replay_is_deterministic_and_step_is_the_fold_of_evolve(moves):
    events = script_of(moves).events
    first = [decisions for _, decisions in replay(events)]
    second = [decisions for _, decisions in replay(events)]
    assert first == second

    state = initial_state(events[0].key)
    for observation, decisions in zip(events, first, strict=True):
        stepped, _ = step(state, observation)
        folded = evolve(state, observation)
        for decision in decisions:
            folded = evolve(folded, decision)
        assert stepped == folded
        state = stepped


@settings(max_examples=200, deadline=None)
@given(st.lists(steps, max_size=40))
def test_folding_an_observation_never_admits_a_spec_only_the_recorded_verdict_does(moves):
    events = script_of(moves).events
    state = initial_state(events[0].key)
    for observation, decisions in replay(events):
        observed = evolve(state, observation)
        judged = (state.generation, state.spec, state.rejected, state.exit_codes)
        if observed.uid == state.uid:
            assert (observed.generation, observed.spec, observed.rejected, observed.exit_codes) == (
                judged
            )
        verdicts = [d for d in decisions if isinstance(d, JobAdmitted | JobRejected)]
        assert len(verdicts) <= 1
        for decision in decisions:
            observed = evolve(observed, decision)
        state = observed


def _leaves_the_state_as_it_was(state: JobState, observation: object) -> bool:
    if evolve(state, observation) != state:  # type: ignore[arg-type]
        return False
    if isinstance(observation, JobObserved):
        return observation.generation <= state.generation  # else admission judges it
    return isinstance(observation, PodObserved)


@settings(max_examples=400, deadline=None)
@given(st.lists(steps, max_size=40), st.sampled_from(["SPEC", "PENDING_SPEC", "DEPENDS_SPEC"]))
def test_a_fact_that_leaves_the_state_as_it_was_decides_nothing_even_by_every_rule(moves, spec):
    """A late copy of a phase the pod has left included: under a PodPending policy with a
    timeout too, a Pending copy of a Running pod is no PodPending (no timer)."""
    events = script_of(moves, globals()[spec]).events
    state = initial_state(events[0].key)
    for observation in events:
        if _leaves_the_state_as_it_was(state, observation):
            assert step_by_rules(state, observation, evolve(state, observation))[1] == []
        state, _ = step(state, observation)


@settings(max_examples=300, deadline=None)
@given(st.lists(steps, max_size=40))
def test_a_job_held_frozen_once_settled_decides_as_one_kept_in_memory(moves):
    events = script_of(moves).events
    kept: dict[str, JobState] = {}
    held = JobStates()
    for (_, decisions), (_, decided_held) in zip(
        replay(events, kept), replay(events, held), strict=True
    ):
        assert decided_held == decisions
        assert dict(held) == kept
        key = events[0].key
        assert (held.frozen(key) is not None) == (key in kept and settled(kept[key]))


@settings(max_examples=200, deadline=None)
@given(st.lists(steps, max_size=40))
def test_every_state_frozen_and_thawed_between_steps_decides_the_same(moves):
    """The compact record is lossless for any state, settled or not."""
    events = script_of(moves).events
    state = thawed = initial_state(events[0].key)
    for observation in events:
        state, decisions = step(state, observation)
        thawed, decided = step(thaw(freeze(thawed)), observation)
        assert (thawed, decided) == (state, decisions)


#: SPEC with a PodPending policy with a timeout, which a pod first seen Pending matches
PENDING_SPEC: dict[str, Any] = {
    **SPEC,
    "policies": [
        *SPEC["policies"],
        {"event": "PodPending", "action": "RestartJob", "timeout": "1m"},
    ],
}


#: SPEC whose workers wait for the ps to run (a dependsOn reads a going pod's readiness)
DEPENDS_SPEC: dict[str, Any] = {
    **SPEC,
    "tasks": [SPEC["tasks"][0], {**SPEC["tasks"][1], "dependsOn": {"name": ["ps"]}}],
}


@settings(max_examples=400, deadline=None)
@given(st.lists(steps, max_size=40), st.sampled_from([SPEC, PENDING_SPEC, DEPENDS_SPEC]))
def test_a_fact_that_is_no_news_decides_nothing_even_by_every_rule(moves, spec):
    events = script_of([("podgroup", "Inqueue"), *moves], spec).events  # pods asked for
    state = initial_state(events[0].key)
    for observation in events:
        observed = evolve(state, observation)
        # (a fact that leaves the state as it was, a late copy of a phase the pod has
        # left among them: the test before)
        if observed is not state and no_news(state, observation, observed):
            assert step_by_rules(state, observation, observed) == (observed, [])
        state, _ = step(state, observation)


#: the moves that make every pod and see each Pending, then Running
ALL_RUNNING = [("podgroup", "Inqueue")] + [
    ("pod", pod, phase, 0, None) for phase in ("Pending", "Running") for pod in PODS
]


@settings(max_examples=400, deadline=None)
@given(st.lists(steps, max_size=40), st.sampled_from([SPEC, PENDING_SPEC, DEPENDS_SPEC]))
def test_a_routine_fact_decides_as_every_rule_does(moves, spec):
    """From a job whose pods all run (most routine facts come to a running job)."""
    events = script_of([*ALL_RUNNING, *moves], spec).events
    state = initial_state(events[0].key)
    for observation in events:
        observed = evolve(state, observation)
        if not no_news(state, observation, observed):
            routine = routine_step(state, observation, observed)
            if routine is not None:
                assert encoded(routine) == encoded(step_by_rules(state, observation, observed))
        state, _ = step(state, observation)
