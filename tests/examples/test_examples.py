"""The shipped examples are what their scripts write, and replay to the README's timelines."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from lavalog.cli.main import main
from tests.examples.scripts import EXAMPLES, write_examples

EXAMPLES_DIR = Path(__file__).resolve().parents[2] / "examples"


def documented_timelines() -> dict[str, str]:
    readme = (EXAMPLES_DIR / "README.md").read_text()
    blocks = re.findall(r"## `([^`]+)`\n\n```\n(.*?)```", readme, flags=re.S)
    return {name: text for name, text in blocks}


def test_files_are_what_the_scripts_write(tmp_path):
    for path in write_examples(tmp_path):
        assert path.read_bytes() == (EXAMPLES_DIR / path.name).read_bytes(), path.name


def test_every_example_is_documented():
    assert sorted(documented_timelines()) == sorted(EXAMPLES)


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_example_replays_to_documented_timeline(name, capsys):
    assert main(["replay", str(EXAMPLES_DIR / name)]) == 0

    assert capsys.readouterr().out == documented_timelines()[name]


def test_replay_json_output_is_the_log_with_decisions(capsys):
    assert main(["replay", "-o", "json", str(EXAMPLES_DIR / "max-retry-exhausted.jsonl")]) == 0

    lines = capsys.readouterr().out.splitlines()
    assert '"type":"JobObserved"' in lines[0]
    assert any('"type":"PodsKill"' in line and "flaky-train-ps-0" in line for line in lines)


def test_replay_reports_a_bad_line(tmp_path, capsys):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"type": "PodObserved"}\n')

    assert main(["replay", str(path)]) == 1
    assert "line 1" in capsys.readouterr().err
