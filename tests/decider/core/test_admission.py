"""Admission is decided and recorded: `evolve` folds the verdict, it never judges a spec.

And a log recorded before admissions were recorded (`tests/data/`) still replays to the
decisions it holds, audits clean, folds to the state the decider reaches, and what-ifs.
"""

from __future__ import annotations

from pathlib import Path

from lavalog.controller.decider.core import evolve, initial_state, replay, step
from lavalog.controller.decider.core.admission import with_admissions
from lavalog.controller.decider.core.state import JobState
from lavalog.events.codec import LogEvent, decode_event, encode, read_jsonl
from lavalog.events.decisions import (
    AnyDecision,
    Decision,
    JobAdmitted,
    JobRejected,
    PodGroupCreate,
)
from lavalog.events.extensions import ExitCodeSet, UncountedDisruptions
from lavalog.events.observations import AnyObservation, JobObserved, Observation
from lavalog.projections.core.audit import Kind, audit
from lavalog.projections.core.whatif import whatif
from tests.decider.support import KEY, T0, UID, admitted, worker_spec
from tests.scenarios import JobScript

BEFORE = Path(__file__).resolve().parents[2] / "data" / "recorded-before-admissions.jsonl"


def script() -> JobScript:
    return JobScript("job", worker_spec(), uid=UID, start=T0)


def decided(observations: list[AnyObservation]) -> list[list[AnyDecision]]:
    return [decisions for _, decisions in replay(observations)]


def recorded_before() -> list[LogEvent]:
    return list(read_jsonl(BEFORE.read_bytes().splitlines()))


def test_a_new_job_is_admitted_first_and_evolve_takes_its_spec_from_the_admission():
    job = script().submit().last
    assert isinstance(job, JobObserved)

    state, decisions = step(initial_state(KEY), job)

    admission, *rest = decisions
    assert isinstance(admission, JobAdmitted)
    assert (admission.id, admission.cause, admission.generation) == (
        f"{job.id}#admitted",
        job.id,
        1,
    )
    assert admission.spec == admitted(worker_spec())  # Volcano's defaults applied
    assert [d.id for d in rest] == [f"{job.id}#{n}" for n in range(len(rest))]
    assert any(isinstance(d, PodGroupCreate) for d in rest)
    # the observation alone admits nothing: the spec comes from the recorded admission
    observed = evolve(initial_state(KEY), job)
    assert (observed.uid, observed.generation, observed.spec) == (UID, 0, None)
    assert evolve(observed, admission).spec == admission.spec == state.spec


def test_an_update_is_admitted_a_forbidden_one_rejected_and_a_late_copy_not_judged():
    s = script().submit().podgroup("Inqueue")
    s.submit(worker_spec(task={"replicas": 5}))
    s.submit(worker_spec(task={"replicas": 5, "template": {"spec": {"containers": []}}}))
    s.observe(JobObserved, generation=2, spec=worker_spec(task={"replicas": 5}))
    states: dict[str, JobState] = {}

    steps = [decisions for _, decisions in replay(s.events, states)]

    (scaled, *_), forbidden, late = steps[2], steps[3], steps[4]
    assert isinstance(scaled, JobAdmitted) and scaled.generation == 2
    assert scaled.spec.tasks[0].replicas == 5
    [rejection] = forbidden
    assert isinstance(rejection, JobRejected) and rejection.id == f"{s.events[3].id}#0"
    assert late == []
    state = states[KEY]
    assert (state.generation, state.spec) == (3, scaled.spec)
    assert state.rejected == rejection.errors


def test_an_admission_records_the_extensions_in_one_way_and_a_plain_job_without_them():
    annotations = {
        "lavalog.io/exit-codes.0": "In 143,137",
        "lavalog.io/uncounted-disruptions": "TerminationByKubelet,EvictionByEvictionAPI",
    }
    spec = worker_spec(policies=[{"exitCode": 137, "action": "RestartJob"}])
    extended = script().submit(spec, annotations=annotations).last
    plain = script().submit().last

    admission, plain_admission = decided([extended])[0][0], decided([plain])[0][0]

    assert isinstance(admission, JobAdmitted)
    assert admission.exit_codes == {"0": ExitCodeSet("In", (137, 143))}
    assert admission.uncounted_disruptions == UncountedDisruptions(
        ("EvictionByEvictionAPI", "TerminationByKubelet")
    )
    assert decode_event(encode(admission)) == admission
    assert b"exit_codes" not in encode(plain_admission)
    assert b"restart_backoff" not in encode(plain_admission)


def test_a_log_recorded_before_replays_to_its_decisions_and_the_admissions():
    log = recorded_before()
    observations = [e for e in log if isinstance(e, Observation)]
    recorded = [e for e in log if isinstance(e, Decision)]

    recomputed = [d for decisions in decided(observations) for d in decisions]

    assert not any(isinstance(d, JobAdmitted) for d in recorded)
    assert [d for d in recomputed if not isinstance(d, JobAdmitted)] == recorded
    admitted_jobs = {d.cause for d in recomputed if isinstance(d, JobAdmitted)}
    assert len(admitted_jobs) == 10  # each generation admitted, rejected ones not


def test_a_log_recorded_before_audits_clean_once_its_admissions_are_supplied():
    log = recorded_before()

    as_recorded = audit(log, replay)
    upcast = audit(with_admissions(log), replay)

    assert {(d.kind, d.type) for d in as_recorded.differences} == {(Kind.MISSING, "JobAdmitted")}
    assert upcast.ok, upcast.differences
    assert upcast.recomputed == upcast.recorded == 186


def test_a_log_recorded_before_folds_to_the_state_the_decider_reaches():
    """The fold property over a recorded log: folding its observations and decisions (its
    admissions supplied) with `evolve` gives each job the state `replay` ends with."""
    log = recorded_before()
    replayed: dict[str, JobState] = {}
    for _ in replay([e for e in log if isinstance(e, Observation)], replayed):
        pass

    folded: dict[str, JobState] = {}
    for event in with_admissions(log):
        folded[event.key] = evolve(folded.get(event.key) or initial_state(event.key), event)

    live = {key: state for key, state in folded.items() if not state.deleted}
    assert live == replayed


def test_supplying_admissions_to_a_log_written_now_changes_nothing():
    observations = [e for e in recorded_before() if isinstance(e, Observation)]
    log: list[LogEvent] = [
        event for observation, ds in replay(observations) for event in (observation, *ds)
    ]

    assert with_admissions(log) == log


def test_a_what_if_that_changes_nothing_finds_no_divergence_in_a_log_recorded_before():
    log = [e for e in recorded_before() if e.key == "ml/extended"]

    report = whatif(log, replay, lambda manifest: manifest)

    assert report.identical, report.divergence
    assert all("JobAdmitted" not in s.alternative for s in report.steps)
