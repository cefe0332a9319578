"""`lavalog --version`, and help texts that state each default once."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from lavalog.cli.main import COMMANDS, main
from lavalog.controller.version import version


def test_version_is_the_installed_packages() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "lavalog.cli.main", "--version"], capture_output=True, text=True
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, f"lavalog {version()}\n", "")
    assert re.fullmatch(r"\d+\.\d+\.\d+.*", version())


#: what `lavalog --help` may import of lavalog's own packages
HELP_NEEDS = {
    "lavalog",
    "lavalog.cli",
    "lavalog.cli.main",
    "lavalog.controller",
    "lavalog.controller.version",
}
PROJECT = {"lavalog", "controller", "projections", "simulator", "events"}
HEAVY = {"aiokafka", "aiohttp", "kubernetes_asyncio", "yaml", "msgspec", "structlog"}


def test_help_lists_every_command_without_importing_one() -> None:
    """`lavalog --help` answers from the table of commands: no command's module, and none
    of the libraries the commands use, is imported (a fresh interpreter, as the script)."""
    script = (
        "import sys\n"
        "from lavalog.cli.main import main\n"
        "main(['--help'])\n"
        "print(*sys.modules, file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    rows = [line.split(None, 1) for line in done.stdout.splitlines() if line.startswith("  ")]
    assert {name: text for name, text in rows} == COMMANDS
    loaded = set(done.stderr.split())
    assert {m for m in loaded if m.split(".")[0] in PROJECT} <= HELP_NEEDS
    assert not {m for m in loaded if m.split(".")[0] in HEAVY}


def help_text(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    with pytest.raises(SystemExit) as exited:
        main([*args, "--help"])
    assert exited.value.code == 0
    return " ".join(capsys.readouterr().out.split())


@pytest.mark.parametrize(
    "command",
    [[name] for name in COMMANDS] + [["projections", "serve"], ["projections", "rebuild"]],
)
def test_help_states_each_default_once(
    capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    text = help_text(capsys, *command)
    assert "(default: None)" not in text
    assert "(default: )" not in text
    assert "(default: False)" not in text
    assert "(default: [])" not in text
    # one option's help, from its flag to the next: never two defaults
    for option in re.split(r" (?=--?[a-z])", text):
        assert option.count("(default: ") <= 1, option


def test_help_still_shows_defaults_it_does_not_say(capsys: pytest.CaptureFixture[str]) -> None:
    text = help_text(capsys, "jobs")
    assert "at most this many jobs (1 to 1,000) (default: 500)" in text


def test_a_zero_default_is_still_a_default(capsys: pytest.CaptureFixture[str]) -> None:
    assert "seconds added to every API answer (default: 0.0)" in help_text(capsys, "sim")
