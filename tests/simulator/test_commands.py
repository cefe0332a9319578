"""How the kubelet reads a container's command: a table, run on a fake clock."""

from __future__ import annotations

import math

import pytest

from lavalog.simulator import commands

DEFAULT = 7.0


async def run(
    command: list[str] | None, args: list[str] | None = None
) -> tuple[int, float, list[str]]:
    slept: list[float] = []
    logged: list[str] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    program = commands.parse(command, args)
    code = await commands.run(program, sleep=sleep, log=logged.append, default_seconds=DEFAULT)
    return code, sum(slept), logged


@pytest.mark.parametrize(
    ("command", "args", "code", "seconds", "log"),
    [
        pytest.param(["sleep", "5"], None, 0, 5, [], id="sleep"),
        pytest.param(["sleep"], ["2m"], 0, 120, [], id="sleep-args-unit"),
        pytest.param(["/bin/sleep", "1.5"], None, 0, 1.5, [], id="sleep-path-fraction"),
        pytest.param(["sh", "-c", "exit 3"], None, 3, 0, [], id="exit"),
        pytest.param(["true"], None, 0, 0, [], id="true"),
        pytest.param(["false"], None, 1, 0, [], id="false"),
        pytest.param(["echo", "hello", "world"], None, 0, 0, ["hello world"], id="echo"),
        pytest.param(["sh", "-c", "sleep 5; exit 3"], None, 3, 5, [], id="sequence"),
        pytest.param(
            ["/bin/bash", "-c", "false && sleep 9; echo done"], None, 0, 0, ["done"], id="and-skips"
        ),
        pytest.param(["sh", "-c", "true && sleep 2 && exit 4"], None, 4, 2, [], id="and-runs"),
        pytest.param(["sh", "-c", "false || echo recovered"], None, 0, 0, ["recovered"], id="or"),
        pytest.param(["sh", "-c", "false; exit"], None, 1, 0, [], id="exit-keeps-status"),
        pytest.param(
            ["sh", "-c", "echo 'a; b'; exit 256"], None, 0, 0, ["a; b"], id="quoted-and-wrapped"
        ),
        pytest.param(["sh", "-c", "sleep 1\nsleep 2"], None, 0, 3, [], id="newlines"),
        pytest.param(["sh"], ["-c", "sleep 3 ; false"], 1, 3, [], id="script-in-args"),
        pytest.param(
            ["python", "train.py"], None, 127, 0, ["sh: python: not found"], id="unknown-word-127"
        ),
        pytest.param(
            ["sh", "-c", "trian && sleep 9"], None, 127, 0, ["sh: trian: not found"], id="typo-127"
        ),
        pytest.param(
            ["sh", "-c", "trian || echo fallback"],
            None,
            0,
            0,
            ["sh: trian: not found", "fallback"],
            id="not-found-is-a-failure",
        ),
        pytest.param(["/app/train", "--epochs=3"], None, 0, DEFAULT, [], id="path-runs-default"),
        pytest.param(["./train.sh"], None, 0, DEFAULT, [], id="relative-path-runs-default"),
        pytest.param(None, None, 0, DEFAULT, [], id="image-entrypoint"),
        pytest.param(
            ["sh", "-c", "sleep 4; /opt/train.py; exit 2"], None, 2, 4 + DEFAULT, [], id="mixed"
        ),
        pytest.param(["sleep", "nope"], None, 1, 0, [], id="bad-sleep"),
        # Volcano's job_restart.go fails a pod with `sh fake.sh`
        pytest.param(
            ["sh", "-c", "sh fake.sh"],
            None,
            127,
            0,
            ["sh: fake.sh: No such file or directory"],
            id="missing-script-127",
        ),
        pytest.param(["bash", "-x", "./run.sh"], None, 0, DEFAULT, [], id="script-path-runs"),
        pytest.param(["sh", "-c", "sh"], None, 0, 0, [], id="shell-reads-empty-stdin"),
    ],
)
async def test_command_interpretation(
    command: list[str] | None, args: list[str] | None, code: int, seconds: float, log: list[str]
) -> None:
    assert await run(command, args) == (code, seconds, log)


async def test_sleep_infinity() -> None:
    assert (await run(["sleep", "infinity"]))[1] == math.inf


@pytest.mark.parametrize(
    ("script", "files", "log"),
    [
        pytest.param(
            "echo CUDA OOM > /dev/termination-log",
            {"/dev/termination-log": "CUDA OOM\n"},
            [],
            id="redirect",
        ),
        pytest.param("echo a > /f; echo b >> /f; echo c", {"/f": "a\nb\n"}, ["c"], id="append"),
        pytest.param("echo a > /f; echo b > /f", {"/f": "b\n"}, [], id="truncate"),
        pytest.param("true > /f", {"/f": ""}, [], id="empty-file"),
        pytest.param(
            "trian > /f", {"/f": ""}, ["sh: trian: not found"], id="complaints-stay-in-the-log"
        ),
        pytest.param("echo a>/f", {"/f": "a\n"}, [], id="no-spaces"),
    ],
)
async def test_a_shell_redirects_output_to_the_containers_files(
    script: str, files: dict[str, str], log: list[str]
) -> None:
    written: dict[str, str] = {}
    logged: list[str] = []

    async def sleep(seconds: float) -> None:
        pass

    program = commands.parse(["sh", "-c", script], None)
    await commands.run(program, sleep=sleep, log=logged.append, default_seconds=0, files=written)
    assert (written, logged) == (files, log)


async def test_without_a_shell_a_redirection_is_an_argument() -> None:
    assert (await run(["echo", "a", ">", "/f"]))[2] == ["a > /f"]
