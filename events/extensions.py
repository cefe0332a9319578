"""lavalog's extensions of a Volcano Job, as admission reads them from its `lavalog.io/`
annotations: the values a `JobAdmitted` decision records and the decider runs by.

Admission (`controller/admission/`) parses and judges the annotations; these are only
the values it answers with. Sets are sorted tuples, so that a value is written the same
way every time (a decision recomputed by the audit must equal the one recorded).
docs/semantics.md, "Extensions", says what each one does.
"""

from __future__ import annotations

import msgspec


class ExitCodeSet(msgspec.Struct, frozen=True):
    """`In` or `NotIn` a set of exit codes (`lavalog.io/exit-codes.<policy>`): widens a
    policy's `exitCode`."""

    operator: str
    #: sorted
    values: tuple[int, ...]

    def matches(self, code: int) -> bool:
        """Exit code 0 is success, never a failure to match."""
        if code == 0:
            return False
        return (code in self.values) == (self.operator == "In")


class RestartBackoff(msgspec.Struct, frozen=True):
    """Seconds before the first restart, the growth per restart, and the longest wait
    (`lavalog.io/restart-backoff`)."""

    initial: float
    factor: float
    cap: float


class UncountedDisruptions(msgspec.Struct, frozen=True):
    """The `DisruptionTarget` reasons whose restarts count no retry; empty: any reason
    (`lavalog.io/uncounted-disruptions`)."""

    #: sorted
    reasons: tuple[str, ...] = ()

    def covers(self, reason: str) -> bool:
        """Whether a pod disrupted for `reason` ("" when it was not disrupted) is covered."""
        return bool(reason) and (not self.reasons or reason in self.reasons)
