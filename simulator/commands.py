"""What a simulated container does, read from its `command` and `args`.

`sleep N`, `exit N`, `true`, `false`, `echo ...` and sequences joined by `;`, `&&` or
`||` (directly or under `sh -c "..."`) behave as in a shell, and so does a shell's
output redirection (`echo text > FILE`, `>>` to append): the container's files are kept
for its kubelet, which reads its termination message from one. An executable path
(`/app/train`, `./run.sh`, also as a script: `sh ./run.sh`) or no command at all (the
image's entrypoint) runs for the cluster's default time and succeeds; any other word (or
script name: `sh fake.sh`) is not found, as in a shell: exit
code 127 and "sh: WORD: not found" in the log, so a typo fails the pod instead of
passing silently. That is enough to script every lifecycle a controller must handle:
success, failure with a chosen exit code, and timing.
"""

from __future__ import annotations

import math
import os
import shlex
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache

_SHELLS = frozenset({"sh", "bash", "ash", "dash", "zsh"})
_CONNECTORS = frozenset({";", "&&", "||"})
_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
#: a shell's exit code for a command it cannot find
NOT_FOUND = 127


_REDIRECTS = frozenset({">", ">>"})


@dataclass(frozen=True, slots=True)
class Redirect:
    """A shell's `> FILE` (or `>> FILE`, `append`): the command's output goes to FILE."""

    path: str
    append: bool = False


@dataclass(frozen=True, slots=True)
class Step:
    """One simple command and the connector that joins it to the previous one."""

    connector: str  # ";" for the first step
    argv: tuple[str, ...]
    #: where a shell sends its output, if it was redirected
    redirect: Redirect | None = None


Program = tuple[Step, ...]


def parse(command: Sequence[str] | None, args: Sequence[str] | None) -> Program:
    argv = [*(command or ()), *(args or ())]
    if not argv:
        return (Step(";", ()),)
    if os.path.basename(argv[0]) in _SHELLS and "-c" in argv[1:]:
        at = argv.index("-c", 1)
        return parse_script(argv[at + 1] if len(argv) > at + 1 else "")
    return (Step(";", tuple(argv)),)


@lru_cache(maxsize=1024)
def parse_script(script: str) -> Program:
    """The steps of a `sh -c` script; cached, as every pod of a Job runs the same one."""
    lexer = shlex.shlex(script.replace("\n", ";"), posix=True, punctuation_chars=";&|>")
    lexer.whitespace_split = True
    steps: list[Step] = []
    connector, current = ";", list[str]()
    for token in lexer:
        if token in _CONNECTORS:
            if current:
                steps.append(_step_of(connector, current))
            connector, current = token, []
        else:
            current.append(token)
    if current:
        steps.append(_step_of(connector, current))
    return tuple(steps) or (Step(";", ("true",)),)


def _step_of(connector: str, words: list[str]) -> Step:
    """A simple command, its redirection (the last `>`/`>>` and the word after it) taken
    out of its words."""
    argv: list[str] = []
    redirect = None
    tokens = iter(words)
    for word in tokens:
        if word in _REDIRECTS:
            path = next(tokens, "")
            redirect = Redirect(path, append=word == ">>") if path else redirect
        else:
            argv.append(word)
    return Step(connector, tuple(argv), redirect)


def _duration(text: str) -> float:
    if text in ("inf", "infinity"):
        return math.inf
    unit = _UNITS.get(text[-1:], 0.0)
    return float(text[:-1]) * unit if unit else float(text)


async def _script(
    argv: tuple[str, ...],
    *,
    sleep: Callable[[float], Awaitable[None]],
    log: Callable[[str], None],
    default_seconds: float,
) -> int:
    """`sh FILE`: a script file is read as an executable path is (a path exists and runs
    for the default time, a bare name does not exist: bash and dash say so with 127); a
    shell with no file reads an empty stdin and ends."""
    script = next((a for a in argv[1:] if not a.startswith("-")), None)
    if script is None:
        return 0
    if "/" not in script:
        log(f"{argv[0]}: {script}: No such file or directory")
        return NOT_FOUND
    await sleep(default_seconds)
    return 0


class Exit(Exception):
    """`exit N`: ends the whole program."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


async def run(
    program: Program,
    *,
    sleep: Callable[[float], Awaitable[None]],
    log: Callable[[str], None],
    default_seconds: float,
    files: dict[str, str] | None = None,
) -> int:
    """Run `program` on simulated time; return its exit code. `files`: the container's
    files (path -> content), which redirected output is written to."""
    status = 0
    files = {} if files is None else files
    try:
        for step in program:
            if (step.connector == "&&" and status != 0) or (step.connector == "||" and status == 0):
                continue
            out = log if step.redirect is None else _writer(files, step.redirect)
            status = await _step(
                step.argv, status, sleep=sleep, log=log, out=out, default_seconds=default_seconds
            )
    except Exit as done:
        return done.code
    return status


def _writer(files: dict[str, str], redirect: Redirect) -> Callable[[str], None]:
    """Where a redirected command's lines go: its file, emptied first unless appended to."""
    if not redirect.append or redirect.path not in files:
        files[redirect.path] = ""

    def write(line: str) -> None:
        files[redirect.path] += line + "\n"

    return write


async def _step(
    argv: tuple[str, ...],
    status: int,
    *,
    sleep: Callable[[float], Awaitable[None]],
    log: Callable[[str], None],
    out: Callable[[str], None],
    default_seconds: float,
) -> int:
    """One command; `out` takes its output, `log` a shell's complaints (stderr)."""
    name = os.path.basename(argv[0]) if argv else ""
    if name == "sleep":
        try:
            total = sum(_duration(a) for a in argv[1:])
        except ValueError:
            return 1
        await sleep(total)
        return 0
    if name == "exit":
        try:
            raise Exit(int(argv[1]) & 0xFF if len(argv) > 1 else status)
        except ValueError:
            raise Exit(2) from None
    if name in ("true", ":"):
        return 0
    if name == "false":
        return 1
    if name == "echo":
        out(" ".join(argv[1:]))
        return 0
    if name in _SHELLS:
        return await _script(argv, sleep=sleep, log=log, default_seconds=default_seconds)
    if argv and "/" not in argv[0]:
        log(f"sh: {argv[0]}: not found")
        return NOT_FOUND
    await sleep(default_seconds)
    return 0
