"""A status write replaces the fields lavalog owns (Volcano's job controller's) and keeps
everything else on the Job."""

from __future__ import annotations

from lavalog.controller.actuator.core.status import merged_status


def test_unknown_fields_and_other_writers_resources_are_kept():
    current = {
        "state": {"phase": "Running", "lastTransitionTime": "2027-01-15T08:00:00Z"},
        "running": 3,
        "runningDuration": "5m0s",
        "controlledResources": {"plugin-ssh": "ssh", "gateway-route": "r1"},
        "someFutureField": {"kept": True},
    }
    written = {
        "state": {"phase": "Restarting", "lastTransitionTime": "2027-01-15T08:01:00Z"},
        "running": 0,
        "runningDuration": None,
        "controlledResources": {"plugin-svc": "svc"},
        "conditions": [{"status": "Restarting", "lastTransitionTime": None}],
    }
    assert merged_status(current, written) == {
        "state": {"phase": "Restarting", "lastTransitionTime": "2027-01-15T08:01:00Z"},
        "running": 0,
        "controlledResources": {"gateway-route": "r1", "plugin-svc": "svc"},
        "conditions": [{"status": "Restarting"}],
        "someFutureField": {"kept": True},
    }


def test_nothing_of_lavalogs_left_removes_the_resources_map():
    assert merged_status({"controlledResources": {"plugin-env": "env"}}, {"running": 1}) == {
        "running": 1
    }
