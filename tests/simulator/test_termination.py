"""A terminated container's message as the kubelet reads it: its termination message
file, else (FallbackToLogsOnError, a failure) its log's tail; with the kubelet's caps."""

from __future__ import annotations

from typing import Any

import pytest

from lavalog.simulator.termination import pod_share, termination_message

FILE = {"terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"}
FALLBACK = {**FILE, "terminationMessagePolicy": "FallbackToLogsOnError"}
LOG = [f"line {n}" for n in range(100)]


@pytest.mark.parametrize(
    ("container", "code", "reason", "files", "expected"),
    [
        pytest.param(
            FILE, 1, "Error", {"/dev/termination-log": "bad shard\n"}, "bad shard\n", id="file"
        ),
        pytest.param(FILE, 1, "Error", {}, "", id="file-policy-no-fallback"),
        pytest.param(
            FALLBACK,
            1,
            "Error",
            {"/dev/termination-log": "bad shard\n"},
            "bad shard\n",
            id="file-first",
        ),
        pytest.param(
            FALLBACK,
            137,
            "OOMKilled",
            {},
            "".join(f"line {n}\n" for n in range(20, 100)),
            id="log-tail-80-lines",
        ),
        pytest.param(FALLBACK, 0, "Completed", {}, "", id="no-fallback-on-success"),
        pytest.param(FALLBACK, 128, "ContainerCannotRun", {}, "", id="never-ran"),
        pytest.param(
            {**FALLBACK, "terminationMessagePath": ""},
            1,
            "Error",
            {"/dev/termination-log": "x"},
            "".join(f"line {n}\n" for n in range(20, 100)),
            id="no-path",
        ),
        pytest.param(
            {**FILE, "terminationMessagePath": "/tmp/why"},
            1,
            "Error",
            {"/tmp/why": "why\n", "/dev/termination-log": "not this"},
            "why\n",
            id="own-path",
        ),
    ],
)
def test_termination_message(
    container: dict[str, Any], code: int, reason: str, files: dict[str, str], expected: str
) -> None:
    message = termination_message(container, exit_code=code, reason=reason, files=files, log=LOG)
    assert message == expected


def test_the_file_keeps_its_last_4_kib_and_the_log_its_last_2_kib() -> None:
    big = "x" * 5000 + "END"
    from_file = termination_message(
        FILE, exit_code=1, reason="Error", files={"/dev/termination-log": big}, log=[]
    )
    assert len(from_file) == 4096 and from_file.endswith("END")
    long_lines = ["y" * 100 + str(n) for n in range(80)]
    from_log = termination_message(FALLBACK, exit_code=1, reason="Error", files={}, log=long_lines)
    assert len(from_log) == 2048 and from_log.endswith("79\n")


def test_a_pod_shares_12_kib_evenly_keeping_each_messages_start() -> None:
    assert pod_share("a" * 5000, 2) == "a" * 5000
    assert pod_share("b" * 5000, 4) == "b" * 3072
