"""`lavalog run`'s API budget and retry limit: Volcano's flags, their variables, checked
before anything starts."""

from __future__ import annotations

import pytest

from lavalog.cli.main import main


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
