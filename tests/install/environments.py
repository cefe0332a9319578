"""Fresh virtualenvs of lavalog as users get it, and a run of the product in one.

`image_environment` installs what deploy/Dockerfile installs, by running the Dockerfile's own
`pip install` lines (no container engine where the tests run); `lowest_environment` installs
the lowest versions pyproject.toml allows (`uv pip compile --resolution lowest-direct`).
`Product` starts that environment's `lavalog run` and `lavalog projections serve` (on
PostgreSQL, with Kubernetes authentication) against a simulated cluster and a broker.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lavalog.controller.broker import free_port

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "deploy" / "Dockerfile"
IMPORT_EVERYTHING = """
import importlib, pkgutil, lavalog
failed = []
for info in pkgutil.walk_packages(lavalog.__path__, "lavalog."):
    try:
        importlib.import_module(info.name)
    except Exception as exc:
        failed.append(f"{info.name}: {type(exc).__name__}: {exc}")
print("\\n".join(failed) or "ok")
"""


def run(*argv: str | Path, cwd: Path = ROOT) -> str:
    """Run a command; its output, or an assertion error with all of it."""
    done = subprocess.run(
        [str(a) for a in argv], cwd=cwd, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, f"{shlex.join(map(str, argv))}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


@dataclass(frozen=True)
class Environment:
    root: Path

    def bin(self, name: str) -> Path:
        return self.root / "bin" / name

    def versions(self) -> dict[str, str]:
        listed = json.loads(run(self.bin("python"), "-m", "pip", "list", "--format", "json"))
        return {p["name"].lower(): p["version"] for p in listed}

    def import_everything(self) -> str:
        """ "ok", or the modules that fail to import, one a line."""
        return run(self.bin("python"), "-c", IMPORT_EVERYTHING).strip()


def dockerfile_installs() -> list[list[str]]:
    """The `pip install` commands of the Dockerfile's RUN lines, in order."""
    text = DOCKERFILE.read_text().replace("\\\n", " ")
    commands = []
    for line in text.splitlines():
        if line.startswith("RUN "):
            for part in line.removeprefix("RUN ").split("&&"):
                words = shlex.split(part)
                if words[:2] == ["pip", "install"]:
                    commands.append(words[1:])
    return commands


def image_environment(where: Path) -> Environment:
    """A virtualenv made as the image's Python is: the Dockerfile's pip lines, run from the
    repository root (the image's /src holds the same paths)."""
    env = Environment(where)
    run(sys.executable, "-m", "venv", where)
    for command in dockerfile_installs():
        run(env.bin("python"), "-m", "pip", *command)
    return env


def lowest_environment(where: Path, uv: Path) -> Environment:
    """A virtualenv of the lowest versions pyproject.toml allows, extras included."""
    env = Environment(where)
    lowest = where.with_suffix(".txt")
    run(
        uv, "pip", "compile", ROOT / "pyproject.toml",
        "--extra", "postgres", "--extra", "broker", "--extra", "fast",
        "--resolution", "lowest-direct", "--python-version", "3.11", "--quiet", "-o", lowest,
    )  # fmt: skip
    run(uv, "venv", "--quiet", "--python", sys.executable, where)
    run(uv, "pip", "install", "--quiet", "--python", env.bin("python"), "-r", lowest)
    run(uv, "pip", "install", "--quiet", "--python", env.bin("python"), "--no-deps", ROOT)
    return env


@dataclass
class Product:
    """`lavalog run` and `lavalog projections serve` of one environment, as processes."""

    env: Environment
    kubeconfig: Path
    bootstrap: str
    store: str
    prefix: str
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)
    outputs: list[Path] = field(default_factory=list)
    controller_port: int = field(default_factory=free_port)
    projections_url: str = ""

    def start(self) -> None:
        kafka = ("--bootstrap-servers", self.bootstrap, "--topic-prefix", self.prefix)
        self._spawn(
            "run", "--kubeconfig", str(self.kubeconfig), "--http-port",
            str(self.controller_port), "--identity", f"{self.prefix}controller", *kafka,
        )  # fmt: skip
        self._spawn(
            "projections", "serve", "--store", self.store, "--port", "0", "--kubernetes-auth",
            "--kubeconfig", str(self.kubeconfig), *kafka,
        )  # fmt: skip
        self.projections_url = self.wait_for("the projections' address", self._projections_url)

    def _spawn(self, *args: str) -> None:
        """Each process logs to its own file, at info so that a wait that fails shows what
        the process was doing (a pipe nobody reads while it runs would fill and block it)."""
        environ = {k: v for k, v in os.environ.items() if not k.startswith("LAVALOG_")}
        output = self.env.root / f"{self.prefix}{args[0]}.log"
        with output.open("w") as file:
            process = subprocess.Popen(
                [str(self.env.bin("lavalog")), *args, "--log-level", "info"],
                stdout=file,
                stderr=subprocess.STDOUT,
                env=environ,
            )
        self.processes.append(process)
        self.outputs.append(output)

    def _projections_url(self) -> str | None:
        for line in self.outputs[-1].read_text().splitlines():
            if "projections at http://" in line:
                return line.split()[2]
        return None

    def get(self, url: str, token: str | None = None) -> tuple[int, bytes]:
        request = urllib.request.Request(url)
        if token is not None:
            request.add_header("Authorization", f"Bearer {token}")
        try:
            with urllib.request.urlopen(request, timeout=10) as answer:
                return answer.status, answer.read()
        except urllib.error.HTTPError as error:
            return error.code, b""
        except OSError:
            return 0, b""

    def wait_for(self, what: str, check: Any, within: float = 90.0) -> Any:
        deadline = time.monotonic() + within
        while True:
            for process in self.processes:
                assert process.poll() is None, f"{process.args!r} exited: {self._errors()}"
            found = check()
            if found:
                return found
            assert time.monotonic() < deadline, f"{what}: not within {within:g}s\n{self._errors()}"
            time.sleep(0.2)

    def stop(self) -> list[int]:
        """SIGTERM each process; their exit codes."""
        for process in self.processes:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        codes = []
        for process in self.processes:
            try:
                codes.append(process.wait(timeout=30))
            except subprocess.TimeoutExpired:
                process.kill()
                codes.append(process.wait())
        return codes

    def _errors(self) -> str:
        """The end of what each process wrote, running or not."""
        return "\n".join(
            f"{process.args!r}: {output.read_text()[-3000:]}"
            for process, output in zip(self.processes, self.outputs, strict=True)
        )
