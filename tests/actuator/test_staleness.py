"""Which decisions, carried out again, would undo later ones."""

from __future__ import annotations

from typing import Any

import pytest

from controller.actuator.staleness import pods_are_stale, status_is_older
from events.volcano import JobCondition, JobStatus


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
    ],
)
def test_pods_are_stale(current, job_version, stale):
    assert pods_are_stale(current, job_version) is stale


@pytest.mark.parametrize(
    ("current_conditions", "written_conditions", "older"),
    [
        pytest.param(None, 1, False, id="first-write"),
        pytest.param(3, 3, False, id="same-phase-segment"),
        pytest.param(3, 4, False, id="next-phase"),
        pytest.param(5, 3, True, id="a-later-phase-is-written"),
    ],
)
def test_status_is_older(current_conditions, written_conditions, older):
    current = None if current_conditions is None else status("Running", 0, current_conditions)
    written = JobStatus(conditions=tuple(JobCondition(status="Running") for _ in range(written_conditions)))
    assert status_is_older(current, written) is older
