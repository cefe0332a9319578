"""What the job page shows beside the timeline, drawn from the log alone: the Kubernetes
Events the controller records on the Job (Kubernetes keeps them an hour, the log for good),
and the spec of each generation the job ran with."""

from __future__ import annotations

import yaml

from lavalog.controller.actuator.core.job_events import REPORTED, notices
from lavalog.controller.decider.core import replay
from lavalog.events.decisions import Decision
from lavalog.events.observations import JobObserved
from lavalog.projections.core.kube_events import REPORTED_TYPES, kube_events
from lavalog.projections.core.spec import spec_versions
from tests.projections.helpers import sidecar_job
from tests.scenarios import JobScript


def test_the_events_are_those_the_actuator_records_for_the_decisions() -> None:
    decisions = [e for e in sidecar_job() if isinstance(e, Decision)]
    reported = [d for d in decisions if type(d).__name__ in REPORTED_TYPES]
    assert {type(d) for d in reported} <= set(REPORTED)

    events = kube_events(reported)

    written = [
        (d.time, n.type, n.reason, n.message, d.id)
        for d in reported
        for n in notices(d, phase_events=True)
    ]
    assert [(e.time, e.type, e.reason, e.message, e.decision) for e in events] == written
    assert {e.source for e in events} == {"vc-controller-manager"}
    reasons = [e.reason for e in events]
    assert reasons == [
        "Pending", "Running", "ExecuteAction", "Restarting", "Pending", "Running",
        "ExecuteAction", "Restarting",
    ]  # fmt: skip
    assert "container trainer, exit code 137, OOMKilled, node n2" in events[6].message
    # phase changes reach Kubernetes only with `lavalog run --phase-events`, as Volcano
    # writes none; the rest always
    assert [e.reason for e in events if not e.opt_in] == ["ExecuteAction", "ExecuteAction"]


def test_a_failed_job_has_a_warning_event() -> None:
    script = JobScript("once", {"maxRetry": 1, "tasks": [{"name": "w", "replicas": 1}]})
    script.submit().podgroup("Inqueue").pod("w", 0, "Pending").pod("w", 0, "Running", node="n")
    script.pod("w", 0, "Failed", exit_code=1, reason="Error", node="n")
    decisions = [d for _, ds in replay(script.events) for d in ds]
    events = kube_events(d for d in decisions if type(d).__name__ in REPORTED_TYPES)
    warnings = [(e.type, e.reason) for e in events if e.type == "Warning"]
    assert warnings == [("Warning", "Failed")]


def test_each_generation_has_its_spec_as_the_manifest_the_log_holds() -> None:
    spec = {"queue": "q", "tasks": [{"name": "w", "replicas": 1}]}
    script = JobScript("scaled", spec, namespace="ml", uid="u-1", start=100.0, tick=0)
    script.submit(annotations={"lavalog.io/restart-backoff": "10s,2,5m"}).after(5)
    script.observe(JobObserved, generation=1, spec=spec, deleting=False)  # the same again
    script.after(10).submit({"queue": "q", "tasks": [{"name": "w", "replicas": 3}]})
    observed = [e for e in script.events if isinstance(e, JobObserved)]

    versions = spec_versions(observed)

    assert [(v.generation, v.observed) for v in versions] == [(1, 100.0), (2, 115.0)]
    first, second = (yaml.safe_load(v.yaml) for v in versions)
    assert first == {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {
            "name": "scaled",
            "namespace": "ml",
            "uid": "u-1",
            "generation": 1,
            "annotations": {"lavalog.io/restart-backoff": "10s,2,5m"},
        },
        "spec": spec,
    }
    assert second["spec"]["tasks"][0]["replicas"] == 3
    assert "annotations" not in second["metadata"]
