"""`lavalog run` and `lavalog job` without a usable kubeconfig: one line that says what was
tried and what to do, exit code 1, no traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from lavalog.cli.main import main

WHAT_TO_DO = (
    "pass --kubeconfig FILE or set $KUBECONFIG to the kubeconfig of your cluster "
    "(inside a cluster, the pod's service account is used)"
)


@pytest.fixture(autouse=True)
def outside_a_cluster(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No kubeconfig variable, a home without ~/.kube/config, no in-cluster environment."""
    for variable in ("KUBECONFIG", "LAVALOG_KUBECONFIG", "KUBERNETES_SERVICE_HOST"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))


def error_line(capsys: pytest.CaptureFixture[str]) -> str:
    captured = capsys.readouterr()
    assert captured.out == ""
    (line,) = captured.err.splitlines()
    return line


@pytest.mark.parametrize("command", [["run"], ["job", "abort", "ml/train"]])
def test_a_missing_kubeconfig_file_is_one_line(
    command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*command, "--kubeconfig", "/nonexistent"]) == 1
    assert error_line(capsys) == (
        f"lavalog {command[0]}: kubeconfig /nonexistent (from --kubeconfig) does not exist; "
        + WHAT_TO_DO
    )


@pytest.mark.parametrize("command", [["run"], ["job", "abort", "ml/train"]])
def test_no_kubeconfig_outside_a_cluster_lists_what_was_tried(
    command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(command) == 1
    assert error_line(capsys) == (
        f"lavalog {command[0]}: no cluster configuration: --kubeconfig, $LAVALOG_KUBECONFIG, "
        "$KUBECONFIG not given, no ~/.kube/config, and not running inside a cluster "
        "(Service host/port is not set); " + WHAT_TO_DO
    )


def test_a_broken_kubeconfig_from_the_environment_is_named_with_its_origin(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = tmp_path / "broken.kubeconfig"
    broken.write_text("apiVersion: v1\nkind: Config\n")
    monkeypatch.setenv("KUBECONFIG", str(broken))
    assert main(["job", "resume", "ml/train"]) == 1
    assert error_line(capsys) == (
        f"lavalog job: kubeconfig {broken} (from $KUBECONFIG) cannot be used: Invalid "
        f"kube-config file. Expected key current-context in {broken}; " + WHAT_TO_DO
    )


def test_kubectls_default_file_is_used_when_nothing_else_is_given(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / ".kube").mkdir()
    (tmp_path / ".kube" / "config").write_text("apiVersion: v1\nkind: Config\n")
    assert main(["job", "abort", "ml/train"]) == 1
    assert "(from ~/.kube/config) cannot be used" in error_line(capsys)


@pytest.mark.parametrize("command", ["run", "job"])
def test_help_says_kubeconfig_is_honoured(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main([command, "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert (
        "kubeconfig file (default: $LAVALOG_KUBECONFIG, else $KUBECONFIG, else ~/.kube/config "
        "if it exists, else the in-cluster service account)" in help_text
    )
