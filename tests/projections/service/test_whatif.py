"""What-if over the shipped examples: divergence point, honesty after it, identity."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from lavalog.controller.decider.core import replay
from lavalog.events.codec import LogEvent
from lavalog.events.observations import Observation
from lavalog.projections.core.whatif import compose, parse_set, whatif
from lavalog.projections.service.sources.file import read_file

EXAMPLES = Path(__file__).parents[3] / "examples"


def _events(name: str) -> list[LogEvent]:
    return [item.event for item in read_file(EXAMPLES / name)]


def test_more_retries_diverge_at_the_second_failure() -> None:
    report = whatif(_events("max-retry-exhausted.jsonl"), replay, parse_set("spec.maxRetry=5"))
    assert report.divergence == "ml/flaky-train@13"  # the worker's second failure
    assert report.recorded_phase == "Failed"
    assert report.alternative_phase == "Restarting"  # and unknown beyond
    last = report.steps[-1]
    assert "PodGroupDelete" in last.recorded and "PodGroupDelete" not in last.alternative


def test_the_recorded_max_retry_changes_nothing() -> None:
    report = whatif(_events("max-retry-exhausted.jsonl"), replay, parse_set("spec.maxRetry=2"))
    assert report.identical
    assert report.alternative_phase == report.recorded_phase == "Failed"


@pytest.mark.parametrize("name", sorted(p.name for p in EXAMPLES.glob("*.jsonl")))
def test_an_unchanged_spec_reproduces_every_decision(name: str) -> None:
    report = whatif(_events(name), replay, compose([]))
    assert report.identical
    assert report.alternative_restarts == report.recorded_restarts


def test_a_task_selector_changes_only_that_task() -> None:
    spec = {"tasks": [{"name": "ps", "replicas": 1}, {"name": "worker", "replicas": 1}]}
    changed = parse_set(
        'spec.tasks[worker].policies=[{"event":"PodFailed","action":"RestartTask"}]'
    )
    result = changed({"spec": spec})["spec"]
    assert result["tasks"][1]["policies"] == [{"event": "PodFailed", "action": "RestartTask"}]
    assert "policies" not in result["tasks"][0] and "policies" not in spec["tasks"][1]
    with pytest.raises(ValueError, match="no tasks named 'chief'"):
        parse_set("spec.tasks[chief].replicas=2")({"spec": spec})


def test_the_command_prints_json_and_exits_one_on_divergence() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "lavalog.cli.main",
            "whatif",
            "ml/flaky-train",
            "--file",
            str(EXAMPLES / "max-retry-exhausted.jsonl"),
            "--set",
            "spec.maxRetry=5",
            "-o",
            "json",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    assert json.loads(done.stdout)["divergence"] == "ml/flaky-train@13"


@pytest.mark.parametrize("name", sorted(p.name for p in EXAMPLES.glob("*.jsonl")))
def test_an_unchanged_spec_matches_the_recorded_decisions(name: str) -> None:
    observations = [e for e in _events(name) if isinstance(e, Observation)]
    log: list[LogEvent] = []
    for observation, decisions in replay(observations):  # the log as the decider writes it
        log += [observation, *decisions]
    report = whatif(log, replay, compose([]))
    assert report.baseline == "recorded" and report.identical


def test_all_history_summarises_phase_restarts_and_pod_hours(tmp_path: Path) -> None:
    log = tmp_path / "all.jsonl"
    log.write_bytes(
        b"".join(
            (EXAMPLES / n).read_bytes() for n in sorted(p.name for p in EXAMPLES.glob("*.jsonl"))
        )
    )
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "lavalog.cli.main",
            "whatif",
            "--all",
            "--file",
            str(log),
            "--set",
            "spec.maxRetry=1",
            "-o",
            "json",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    summary = json.loads(done.stdout)
    assert done.returncode == 1, done.stderr
    assert summary["jobs"] == 4 and summary["diverged"] == 3
    assert summary["fewer_restarts"] >= 1 and summary["pod_hours_saved"] > 0
    assert summary["pod_hours_spent"] == 0  # fewer retries never cost compute
    only = subprocess.run(
        [
            sys.executable,
            "-m",
            "lavalog.cli.main",
            "whatif",
            "--all",
            "--file",
            str(log),
            "--namespace",
            "ml",
            "--set",
            "spec.maxRetry=1",
            "-o",
            "json",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert json.loads(only.stdout)["jobs"] < 4


def test_more_retries_spend_an_attempt_where_the_record_gave_up() -> None:
    report = whatif(_events("max-retry-exhausted.jsonl"), replay, parse_set("spec.maxRetry=5"))
    assert report.pod_seconds_spent > 0 and report.pod_seconds_saved == 0


POLICY_ON_1 = 'spec.policies=[{"exitCode":1,"action":"RestartJob"}]'


def test_an_exit_code_set_annotation_keeps_the_restart_a_narrower_policy_loses() -> None:
    """The recorded worker exits 3 and the job restarts (policy exitCode 3). Matching exit
    code 1 alone loses that restart; widening it with an exit-code set keeps it."""
    narrower = whatif(_events("mpi-exit-code-restart.jsonl"), replay, parse_set(POLICY_ON_1))
    assert not narrower.identical
    assert narrower.alternative_restarts < narrower.recorded_restarts

    widened = compose(
        [parse_set(POLICY_ON_1), parse_set("metadata.annotations.lavalog.io/exit-codes.0=In 1,3")]
    )
    report = whatif(_events("mpi-exit-code-restart.jsonl"), replay, widened)
    assert report.identical


def test_a_bad_exit_code_set_is_rejected_in_the_what_if_too() -> None:
    bad = parse_set("metadata.annotations.lavalog.io/exit-codes.0=NotIn 3")
    report = whatif(_events("mpi-exit-code-restart.jsonl"), replay, bad)
    assert report.divergence == "hpc/mpi-allreduce@0"
    assert any("JobRejected" in kind for kind in report.steps[-1].alternative)


def test_only_lavalog_annotations_can_be_set() -> None:
    with pytest.raises(ValueError, match=r"only lavalog\.io/ annotations"):
        parse_set("metadata.annotations.team=ml")


BACKOFF = "metadata.annotations.lavalog.io/restart-backoff"


def test_a_restart_backoff_annotation_delays_the_recorded_restart() -> None:
    """The recorded worker fails and the job restarts at once; with a backoff the restart
    waits for a timer, which the recorded facts never fired: the runs part there."""
    report = whatif(_events("max-retry-exhausted.jsonl"), replay, parse_set(f"{BACKOFF}=10s,2,5m"))

    assert report.divergence == "ml/flaky-train@6"  # the worker's first failure
    last = report.steps[-1]
    assert "ActionDecided" in last.recorded and "TimerScheduled" in last.alternative
    assert "ActionDecided" not in last.alternative
    assert report.alternative_phase == "Running"  # waiting, not restarting


def test_a_bad_restart_backoff_is_rejected_in_the_what_if_too() -> None:
    report = whatif(_events("max-retry-exhausted.jsonl"), replay, parse_set(f"{BACKOFF}=10s"))
    assert report.divergence == "ml/flaky-train@0"
    assert "JobRejected" in report.steps[-1].alternative
