"""The exit codes of lavalog's commands, the same for all, for scripts to branch on."""

from __future__ import annotations

#: the command did what was asked
OK = 0
#: what was asked for is not there (no such job, incarnation or events), or `validate`
#: found a manifest invalid (or unreadable)
NOT_FOUND = 1
INVALID = 1
#: bad usage: an unknown flag, a malformed argument, a parameter the server refused
USAGE = 2
#: the data could not be read: no store, a server that cannot be reached or answers
#: with an error, a token it refused
UNAVAILABLE = 3

#: the `--help` epilog of the read commands (the epilog keeps its line breaks)
READ_EPILOG = (
    "exit codes:\n"
    f"  {OK}: done\n"
    f"  {NOT_FOUND}: not found: no such job, incarnation or events\n"
    f"  {USAGE}: bad usage: a flag, an argument or a filter value\n"
    f"  {UNAVAILABLE}: cannot read: no store at --state-dir, --server unreachable, token refused"
)

VALIDATE_EPILOG = (
    "exit codes:\n"
    f"  {OK}: every file holds Volcano Jobs and all are valid\n"
    f"  {INVALID}: a Job is invalid, a file cannot be read or holds no Job\n"
    f"  {USAGE}: bad usage: a flag or an argument"
)
