"""`lavalog run`'s failover options: the leader Lease's timing and the consumer groups'
session and heartbeat, from flags or `LAVALOG_*` variables, refused with one line when
they cannot work."""

from __future__ import annotations

import argparse

import pytest

from lavalog.cli.commands import run as run_command
from lavalog.cli.kafka_options import kafka_settings
from lavalog.cli.lease_options import lease_timing
from lavalog.cli.main import main
from lavalog.controller.watchers.core.lease import LeaseTiming


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    run_command.configure(parser)
    return parser.parse_args(argv)


def test_the_lease_flags_give_the_timing() -> None:
    args = parse("--lease-duration", "9", "--lease-retry-period", "2")
    assert lease_timing(args) == LeaseTiming(duration=9.0, renew_deadline=6.0, retry_period=2.0)
    assert lease_timing(parse()) == LeaseTiming()


def test_the_lease_variables_give_the_timing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAVALOG_LEASE_DURATION", "4")
    monkeypatch.setenv("LAVALOG_LEASE_RENEW_DEADLINE", "3")
    assert lease_timing(parse()) == LeaseTiming(
        duration=4.0, renew_deadline=3.0, retry_period=4 / 3
    )
    # a flag wins over its variable
    assert lease_timing(parse("--lease-renew-deadline", "2")).renew_deadline == 2.0


def test_the_group_flags_give_the_session_and_heartbeat() -> None:
    args = parse("--kafka-session-timeout-ms", "9000", "--kafka-heartbeat-interval-ms", "3000")
    settings = kafka_settings(args)
    assert (settings.session_timeout_ms, settings.heartbeat_interval_ms) == (9000, 3000)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        pytest.param(
            ["--lease-duration", "6", "--lease-renew-deadline", "8"],
            "--lease-renew-deadline (8.0 s) must be shorter than --lease-duration (6.0 s)",
            id="deadline-after-expiry",
        ),
        pytest.param(
            ["--lease-duration", "6", "--lease-retry-period", "4"],
            "--lease-renew-deadline (4.0 s) must be longer than 1.2 x --lease-retry-period",
            id="retry-too-slow",
        ),
        pytest.param(
            ["--kafka-session-timeout-ms", "5000"],
            "LAVALOG_HEARTBEAT_INTERVAL_MS (2000 ms) must be at most a third of "
            "LAVALOG_SESSION_TIMEOUT_MS (5000 ms)",
            id="heartbeat-over-a-third",
        ),
    ],
)
def test_timings_that_cannot_work_are_one_line_and_exit_2(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", *argv]) == 2
    captured = capsys.readouterr()
    (line,) = captured.err.splitlines()
    assert line.startswith("lavalog run: ")
    assert message in line


def test_a_number_that_is_not_one_is_an_argparse_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        parse("--lease-duration", "soon")
    assert exit_.value.code == 2
    assert "--lease-duration: invalid float value: 'soon'" in capsys.readouterr().err
