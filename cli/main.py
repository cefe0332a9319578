"""The `lavalog` command line: a table of commands, each in its own module.

The table holds each command's one-line help, so `lavalog --help` answers without
importing any command, and a command's module is imported only when it runs: a command
never pays for the libraries of another (the simulator's web server, the broker, the
browser UI). `load` imports each module by a plain import statement, so import-linter
sees every edge from the command line down to the layers. A command module exposes:

    def configure(parser: ArgumentParser) -> None
    def run(args: Namespace) -> int              the process exit code
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import Protocol

from lavalog.controller.version import version

#: command name -> its one line for `lavalog --help` (and its `--help` description)
COMMANDS: dict[str, str] = {
    "demo": "run everything in one process (cluster, broker, controller, UI) with example jobs",
    "run": "run the controller (watchers, decider, actuator) against a cluster and a Kafka",
    "sim": "run the simulated Kubernetes cluster (API server, gang scheduler, kubelets)",
    "broker": "run the development Kafka-compatible broker (tansu, in memory) on 127.0.0.1",
    "job": "suspend, resume, restart, abort, terminate or complete a job (Command objects)",
    "replay": "replay a JSONL file of observations through the decider and print what it decides",
    "schema": "print the JSON Schema of lavalog.observed and lavalog.decisions",
    "validate": (
        "check Volcano Job manifests with Volcano's admission rules and show their defaults"
    ),
    "jobs": "list jobs with their phase, retries and restarts (from the projections store)",
    "timeline": "show a job's timeline: phases, decisions and every pod attempt",
    "events": (
        "print a job's events in log order (observations and decisions); --follow for new ones"
    ),
    "export": "write every event of a job (all incarnations) as JSONL, in log order",
    "audit": "recompute a job's decisions from its observations and report every difference",
    "whatif": "replay a job's recorded facts under a changed spec and compare the decisions",
    "projections": "serve the projections API and web UI, or rebuild the projections store",
}


class Command(Protocol):
    """What `load` returns: a command's module."""

    def configure(self, parser: argparse.ArgumentParser) -> None: ...

    def run(self, args: argparse.Namespace) -> int: ...


def load(name: str) -> Command:
    """Import the module of the command `name` (a key of COMMANDS)."""
    match name:
        case "demo":
            from lavalog.cli.commands import demo

            return demo
        case "run":
            from lavalog.cli.commands import run

            return run
        case "sim":
            from lavalog.cli.commands import sim

            return sim
        case "broker":
            from lavalog.cli.commands import broker

            return broker
        case "job":
            from lavalog.cli.commands import job

            return job
        case "replay":
            from lavalog.cli.commands import replay

            return replay
        case "schema":
            from lavalog.cli.commands import schema

            return schema
        case "validate":
            from lavalog.cli.commands import validate

            return validate
        case "jobs":
            from lavalog.cli.commands import jobs

            return jobs
        case "timeline":
            from lavalog.cli.commands import timeline

            return timeline
        case "events":
            from lavalog.cli.commands import events

            return events
        case "export":
            from lavalog.cli.commands import export

            return export
        case "audit":
            from lavalog.cli.commands import audit

            return audit
        case "whatif":
            from lavalog.cli.commands import whatif

            return whatif
        case "projections":
            from lavalog.cli.commands import projections

            return projections
    raise KeyError(name)


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Appends an option's default to its help, unless the help already says it or there is
    nothing to show (no value, an empty one, a flag that is off). A description or epilog
    keeps its line breaks (e.g. a table of exit codes); each line is wrapped on its own."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        lines = []
        for line in text.splitlines():
            lead = indent + line[: len(line) - len(line.lstrip())]
            lines.append(super()._fill_text(line, width, lead) if line.strip() else "")
        return "\n".join(lines)

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        nothing = action.default is None or action.default is False or action.default == ""
        if "default" in text.lower() or nothing or action.default in ([], argparse.SUPPRESS):
            return text
        return super()._get_help_string(action) or text


def _usage() -> str:
    width = max(len(name) for name in COMMANDS)
    lines = [
        "usage: lavalog COMMAND [options]   |   lavalog --version",
        "",
        "Event-sourced lifecycle controller for Volcano batch jobs (batch.volcano.sh/v1alpha1).",
        "",
        "commands:",
    ]
    lines += [f"  {name.ljust(width)}  {line}" for name, line in COMMANDS.items()]
    lines += ["", "Run `lavalog COMMAND --help` for the options of one command."]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `lavalog` console script."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help", "help"):
        print(_usage())
        return 0
    if args[0] in ("-V", "--version"):
        print(f"lavalog {version()}")
        return 0
    name = args[0]
    if name not in COMMANDS:
        print(f"lavalog: unknown command {name!r}\n\n{_usage()}", file=sys.stderr)
        return 2
    module = load(name)
    parser = argparse.ArgumentParser(
        prog=f"lavalog {name}",
        description=COMMANDS[name],
        formatter_class=HelpFormatter,
    )
    module.configure(parser)
    try:
        return module.run(parser.parse_args(args[1:]))
    except BrokenPipeError:
        # the reader stopped early (`lavalog events ... | head`): nothing went wrong here,
        # and Python must not complain while flushing stdout at exit either
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    raise SystemExit(main())
