"""A terminated container's `message`: its last words, as the kubelet reads them.

The kubelet mounts a file at the container's `terminationMessagePath` (default
`/dev/termination-log`) and, once the container exits, reads the end of it into
`state.terminated.message` (`getTerminationMessage`: at most 4 KiB, the last bytes).
With `terminationMessagePolicy: FallbackToLogsOnError`, a container that failed (exit
code not 0, and it did run) and left the file empty gets the tail of its log instead
(`readLastStringFromContainerLogs`: the last 80 lines, at most the last 2 KiB). The
status manager then cuts every container's message to an even share of 12 KiB per pod,
keeping its start (`normalizeStatus`). Constants: kubelet's
`kubecontainer.MaxContainerTerminationMessage*` and `MaxPodTerminationMessageLogLength`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

#: the most of the termination message file the kubelet reads (its end)
MAX_FILE_BYTES = 4 * 1024
#: the most of a log tail that becomes a termination message (its end)
MAX_LOG_BYTES = 2 * 1024
#: the log lines a fallback message is read from
MAX_LOG_LINES = 80
#: a pod's termination messages together, shared evenly by its containers
MAX_POD_BYTES = 12 * 1024

FALLBACK_TO_LOGS_ON_ERROR = "FallbackToLogsOnError"
#: a container that never ran has no log to fall back to
CANNOT_RUN = "ContainerCannotRun"


def termination_message(
    container: Mapping[str, Any],
    *,
    exit_code: int,
    reason: str,
    files: Mapping[str, str],
    log: Sequence[str],
) -> str:
    """The message of `container` (its spec) that exited with `exit_code` and `reason`,
    from its `files` (path -> content) and its `log` lines, oldest first."""
    fallback = (
        container.get("terminationMessagePolicy") == FALLBACK_TO_LOGS_ON_ERROR
        and exit_code != 0
        and reason != CANNOT_RUN
    )
    path = container.get("terminationMessagePath") or ""
    written = _tail(files.get(path, ""), MAX_FILE_BYTES) if path else ""
    if written or not fallback:
        return written
    return _tail("".join(line + "\n" for line in log[-MAX_LOG_LINES:]), MAX_LOG_BYTES)


def pod_share(message: str, containers: int) -> str:
    """`message` cut to its container's share of the pod's budget, its start kept."""
    share = MAX_POD_BYTES // max(containers, 1)
    data = message.encode()
    return message if len(data) <= share else data[:share].decode(errors="ignore")


def _tail(text: str, limit: int) -> str:
    data = text.encode()
    return text if len(data) <= limit else data[-limit:].decode(errors="ignore")
