"""`lavalog run`'s API budget, retry limit and event loop: Volcano's flags, their
variables, checked before anything starts."""

from __future__ import annotations

import sys

import pytest

from lavalog.cli.main import main
from lavalog.controller.event_loop import EventLoop, loop_factory


@pytest.mark.parametrize("flag", ["--kube-api-qps", "--kube-api-burst"])
def test_a_budget_of_nothing_is_refused_before_anything_starts(
    flag: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", flag, "0", "--bootstrap-servers", "127.0.0.1:1"]) == 2
    assert "--kube-api-qps and --kube-api-burst must be above 0" in capsys.readouterr().err


def test_the_help_says_how_to_size_the_budget(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--kube-api-qps QPS" in text and "Sizing the API budget" in text
    assert "--max-requeue-num N" in text and "(Volcano's flag; default 15)" in text


def test_uvloop_asked_for_where_it_is_missing_says_how_to_install_it(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "uvloop", None)  # as if not installed: import fails
    assert main(["run", "--event-loop", "uvloop", "--bootstrap-servers", "127.0.0.1:1"]) == 2
    assert "pip install 'lavalog[fast]'" in capsys.readouterr().err


def test_auto_takes_asyncios_loop_where_uvloop_is_missing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "uvloop", None)
    assert loop_factory(EventLoop.AUTO) is None
    assert loop_factory(EventLoop.ASYNCIO) is None


def test_the_help_names_the_event_loops(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--event-loop {auto,asyncio,uvloop}" in text and "lavalog[fast]" in text
