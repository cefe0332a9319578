"""Which decisions, carried out again, would undo later ones."""

from __future__ import annotations

from typing import Any

import pytest

from lavalog.controller.actuator.core.staleness import pods_are_stale, status_is_older
from lavalog.events.volcano.api import JobState, JobStatus


def status(phase: str, version: int, conditions: int) -> dict[str, Any]:
    return {"state": {"phase": phase}, "version": version, "conditions": [{}] * conditions}


@pytest.mark.parametrize(
    ("current", "job_version", "stale"),
    [
        pytest.param(None, 0, False, id="new-job"),
        pytest.param(status("Pending", 0, 1), 0, False, id="same-version-pending"),
        pytest.param(status("Restarting", 1, 4), 1, False, id="restart-in-progress"),
        pytest.param(status("Running", 2, 7), 1, True, id="older-version"),
        pytest.param(status("Failed", 1, 6), 1, True, id="version-that-failed"),
        pytest.param(status("Aborted", 1, 6), 1, True, id="version-that-was-aborted"),
        pytest.param(status("Aborted", 1, 6), 2, False, id="resumed-as-a-new-version"),
        pytest.param(status("Aborting", 1, 5), 1, True, id="version-being-aborted"),
        pytest.param(status("Terminating", 0, 3), 0, True, id="version-being-terminated"),
        pytest.param(status("Completing", 0, 3), 0, True, id="version-being-completed"),
    ],
)
def test_pods_are_stale(current, job_version, stale):
    assert pods_are_stale(current, job_version) is stale


def written(phase: str, version: int, retries: int, at: str) -> JobStatus:
    return JobStatus(
        state=JobState(phase=phase, last_transition_time=at), version=version, retry_count=retries
    )


def on_job(phase: str, version: int, retries: int, at: str) -> dict[str, Any]:
    return {
        "state": {"phase": phase, "lastTransitionTime": at},
        "version": version,
        "retryCount": retries,
        # one entry per phase: their number says nothing about order
        "conditions": [{"status": "Pending"}, {"status": "Running"}],
    }


T1, T2 = "2027-01-15T08:00:00Z", "2027-01-15T08:00:05Z"


@pytest.mark.parametrize(
    ("current", "status", "older"),
    [
        pytest.param(None, written("Pending", 0, 0, T1), False, id="first-write"),
        pytest.param(
            on_job("Running", 0, 0, T1), written("Running", 0, 0, T2), False, id="a-later-change"
        ),
        pytest.param(
            on_job("Running", 0, 0, T1), written("Running", 0, 0, T1), False, id="same-time"
        ),
        pytest.param(
            on_job("Running", 0, 0, T2), written("Running", 0, 0, T1), True, id="stamped-later"
        ),
        pytest.param(
            on_job("Pending", 1, 1, T1), written("Running", 0, 0, T2), True, id="a-later-version"
        ),
        pytest.param(
            on_job("Restarting", 0, 1, T1), written("Running", 0, 0, T2), True, id="a-later-retry"
        ),
        pytest.param(
            on_job("Completed", 0, 0, T1), written("Running", 0, 0, T1), True, id="the-run-ended"
        ),
        pytest.param(
            on_job("Aborted", 0, 0, T1), written("Restarting", 1, 0, T1), False, id="resumed"
        ),
    ],
)
def test_status_is_older(current, status, older):
    assert status_is_older(current, status) is older
