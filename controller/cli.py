"""The `lavalog` command line: a table of subcommands, each in its own module.

Subcommand modules are imported only when their command runs, so `lavalog --help`
stays fast and a command never pays for the libraries of another (the simulator's
web server, the broker, the browser UI). A subcommand module exposes:

    HELP: str                                   one line for `lavalog --help`
    def configure(parser: ArgumentParser) -> None
    def run(args: Namespace) -> int              the process exit code
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from typing import Protocol, cast

from controller.version import version

#: command name -> module implementing it. `sim` and `demo` are development tools and
#: live with the simulated cluster; the product itself never imports it.
COMMANDS: dict[str, str] = {
    "demo": "simulator.demo",
    "run": "controller.commands.run",
    "sim": "simulator.cli",
    "broker": "controller.commands.broker",
    "job": "controller.commands.job",
    "replay": "controller.commands.replay",
    "schema": "controller.commands.schema",
    "validate": "controller.commands.validate",
    "jobs": "projections.cli.jobs",
    "timeline": "projections.cli.timeline",
    "events": "projections.cli.events",
    "export": "projections.cli.export",
    "audit": "projections.cli.audit",
    "whatif": "projections.cli.whatif",
    "projections": "projections.cli.projections",
}


class SubcommandModule(Protocol):
    HELP: str

    def configure(self, parser: argparse.ArgumentParser) -> None: ...

    def run(self, args: argparse.Namespace) -> int: ...


def _available() -> dict[str, SubcommandModule]:
    """The commands whose module exists in this installation, in table order."""
    found: dict[str, SubcommandModule] = {}
    for name, module_name in COMMANDS.items():
        try:
            found[name] = cast(SubcommandModule, importlib.import_module(module_name))
        except ModuleNotFoundError as exc:
            if exc.name is None or not module_name.startswith(exc.name):
                raise
    return found


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


def _usage(commands: dict[str, SubcommandModule]) -> str:
    width = max(len(name) for name in commands)
    lines = [
        "usage: lavalog COMMAND [options]   |   lavalog --version",
        "",
        "Event-sourced lifecycle controller for Volcano batch jobs (batch.volcano.sh/v1alpha1).",
        "",
        "commands:",
    ]
    lines += [f"  {name.ljust(width)}  {module.HELP}" for name, module in commands.items()]
    lines += ["", "Run `lavalog COMMAND --help` for the options of one command."]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `lavalog` console script."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help", "help"):
        print(_usage(_available()))
        return 0
    if args[0] in ("-V", "--version"):
        print(f"lavalog {version()}")
        return 0
    name = args[0]
    module_name = COMMANDS.get(name)
    if module_name is None:
        print(f"lavalog: unknown command {name!r}\n\n{_usage(_available())}", file=sys.stderr)
        return 2
    module = cast(SubcommandModule, importlib.import_module(module_name))
    parser = argparse.ArgumentParser(
        prog=f"lavalog {name}",
        description=module.HELP,
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
