"""The demo's live view: one line per job with its phase and pod counts."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

FINAL_PHASES = frozenset({"Completed", "Failed", "Terminated", "Aborted"})


class JobRow(msgspec.Struct, frozen=True):
    name: str
    phase: str
    running: int
    pending: int
    succeeded: int
    failed: int
    retries: int
    version: int
    reason: str

    @property
    def finished(self) -> bool:
        return self.phase in FINAL_PHASES


def job_row(job: Mapping[str, Any]) -> JobRow:
    status = job.get("status") or {}
    state = status.get("state") or {}
    return JobRow(
        name=job["metadata"]["name"],
        phase=state.get("phase") or "-",
        running=status.get("running", 0),
        pending=status.get("pending", 0),
        succeeded=status.get("succeeded", 0),
        failed=status.get("failed", 0),
        retries=status.get("retryCount", 0),
        version=status.get("version", 0),
        reason=state.get("reason", ""),
    )


def render_rows(rows: Sequence[JobRow], *, elapsed: float) -> str:
    header = (
        f"{'JOB':<17} {'PHASE':<11} {'RUN':>3} {'PEND':>4} {'OK':>3} {'FAIL':>4} "
        f"{'RETRY':>5} {'VER':>3}  REASON"
    )
    lines = [f"lavalog demo  {elapsed:5.1f}s", header]
    for row in rows:
        lines.append(
            f"{row.name:<17} {row.phase:<11} {row.running:>3} {row.pending:>4} "
            f"{row.succeeded:>3} {row.failed:>4} {row.retries:>5} {row.version:>3}  {row.reason}"
        )
    return "\n".join(lines)
