"""A fact seen before (a relist, a watcher repeating itself, the echo of a status write)
leaves the job's state as it was: `evolve` returns the same state, not a copy, and
`step` decides nothing on it without running its rules (the property tests hold that
every rule would decide nothing either)."""

from __future__ import annotations

from lavalog.controller.decider.core import evolve, replay, step
from lavalog.controller.decider.core.state import JobState
from lavalog.events.decisions import JobAdmitted
from tests.decider.support import KEY, T0, UID, worker_spec
from tests.scenarios import JobScript


def running() -> tuple[JobScript, JobState]:
    script = JobScript("job", worker_spec(), uid=UID, start=T0).submit().podgroup("Inqueue")
    script.pods("worker", 2, "Running")
    states: dict[str, JobState] = {}
    for _ in replay(script.events, states):
        pass
    return script, states[KEY]


def test_a_pod_seen_again_as_it_was_is_folded_without_a_copy_and_decides_nothing():
    script, state = running()
    again = script.again().last

    assert evolve(state, again) is state
    assert step(state, again) == (state, [])


def test_the_job_seen_again_at_its_generation_decides_nothing():
    script, state = running()
    echo = script.submit(worker_spec()).last  # a new generation: judged
    state, decisions = step(state, echo)
    assert isinstance(decisions[0], JobAdmitted)

    assert step(state, script.again().last) == (state, [])


def test_a_pod_seen_in_another_phase_is_decided():
    script, state = running()
    failed = script.pod("worker", 0, "Failed", exit_code=1).last

    after, decisions = step(state, failed)

    assert after is not state and decisions
