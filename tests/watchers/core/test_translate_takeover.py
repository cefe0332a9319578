"""A Job Volcano ran is published with its status, so the decider can take it over."""

from __future__ import annotations

from typing import Any

import msgspec

from lavalog.controller.watchers.core import translate
from lavalog.controller.watchers.core.objects import Job
from lavalog.controller.watchers.core.translate import Translator
from lavalog.events.observations import JobObserved
from tests.watchers import manifests as m

#: `status` as Volcano's job controller writes it (volcano-sh/apis batch/v1alpha1 JobStatus)
VOLCANO_STATUS: dict[str, Any] = {
    "state": {
        "phase": "Running",
        "reason": "",
        "message": "",
        "lastTransitionTime": "2026-03-01T10:04:00Z",
    },
    "minAvailable": 2,
    "taskStatusCount": {"worker": {"phase": {"Running": 2}}},
    "running": 2,
    "version": 2,
    "retryCount": 2,
    "runningDuration": "3m0s",
    "controlledResources": {"plugin-svc": "svc"},
    "conditions": [
        {"status": "Pending", "lastTransitionTime": "2026-03-01T10:00:00Z"},
        {"status": "Running", "lastTransitionTime": "2026-03-01T10:04:00Z"},
    ],
}


def decode(obj: dict[str, Any]) -> Job:
    return msgspec.json.decode(msgspec.json.encode(obj), type=Job)


def test_a_job_first_seen_carries_the_status_volcano_left() -> None:
    observed = Translator(translate.JOBS).changed(
        decode({**m.vcjob(), "status": VOLCANO_STATUS}), 1.0
    )

    assert isinstance(observed, JobObserved) and observed.status is not None
    status = observed.status
    assert (status.state.phase, status.version, status.retry_count) == ("Running", 2, 2)
    assert status.running_duration == "3m0s"
    assert [c.status for c in status.conditions] == ["Pending", "Running"]
    assert status.task_status_count["worker"].phase == {"Running": 2}


def test_a_job_without_a_phase_carries_no_status() -> None:
    observed = Translator(translate.JOBS).changed(decode({**m.vcjob(), "status": {}}), 1.0)

    assert isinstance(observed, JobObserved) and observed.status is None
