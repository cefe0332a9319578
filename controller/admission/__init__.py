"""Job admission: Volcano's defaults and validation, as pure functions.

lavalog runs no admission webhook of its own, so the decider admits each job it
observes: `admit_job` for a new one, `admit_update` for a change to an admitted one.
Both decode the raw `spec` a user gave, apply Volcano's defaults (`defaults`) and check
Volcano's rules (`rules`, `update`), and answer with the defaulted spec or with every
problem found, each naming its field path. docs/admission.md lists the rules.
Must not import any I/O library or any component: the decider's core calls it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from lavalog.controller.admission.decoding import decode_spec
from lavalog.controller.admission.defaults import with_defaults
from lavalog.controller.admission.disruptions import uncounted_disruptions
from lavalog.controller.admission.exit_codes import exit_code_sets
from lavalog.controller.admission.restart_backoff import restart_backoff
from lavalog.controller.admission.rules import check_new_job
from lavalog.controller.admission.update import check_update
from lavalog.events.extensions import ExitCodeSet, RestartBackoff, UncountedDisruptions
from lavalog.events.volcano.api import FieldError, JobSpec

__all__ = ["Admitted", "Rejected", "admit_job", "admit_update"]


class Admitted(msgspec.Struct, frozen=True):
    """The job may run as `spec`: decoded, with Volcano's defaults applied."""

    spec: JobSpec
    #: lavalog's exit-code sets (an extension), keyed by `exit_codes.policy_key`
    exit_codes: dict[str, ExitCodeSet] = {}
    #: lavalog's restart backoff (an extension), None without its annotation
    restart_backoff: RestartBackoff | None = None
    #: lavalog's uncounted disruptions (an extension), None without its annotation
    uncounted_disruptions: UncountedDisruptions | None = None


class Rejected(msgspec.Struct, frozen=True):
    """The job may not run: every problem found, each naming its field path."""

    errors: tuple[FieldError, ...]


def admit_job(
    raw_spec: Mapping[str, Any], annotations: Mapping[str, str] | None = None
) -> Admitted | Rejected:
    """Decode the raw `spec` of a Job as a user gave it, apply Volcano's defaults, validate
    with Volcano's admission rules, then lavalog's extension `annotations`. Never raises on
    bad input: that is a Rejected."""
    given, errors = decode_spec(raw_spec)
    if given is None:
        return Rejected(errors)
    spec = with_defaults(given)
    return _with_extensions(spec, check_new_job(spec, given), annotations or {})


def admit_update(
    old: JobSpec, raw_new_spec: Mapping[str, Any], annotations: Mapping[str, str] | None = None
) -> Admitted | Rejected:
    """Volcano's rules for updating an admitted job: only scaling (replicas, minAvailable,
    maxRetry) and priorityClassName may change. `old` is the spec admitted before."""
    given, errors = decode_spec(raw_new_spec)
    if given is None:
        return Rejected(errors)
    # Volcano stores defaults on create; lavalog sees the raw spec again, so it defaults
    # both sides the same way (a no-op on a spec that is already defaulted)
    new = with_defaults(given)
    return _with_extensions(new, check_update(with_defaults(old), new, given), annotations or {})


def _with_extensions(
    spec: JobSpec, problems: list[FieldError], annotations: Mapping[str, str]
) -> Admitted | Rejected:
    sets, set_problems = exit_code_sets(spec, annotations)
    backoff, backoff_problems = restart_backoff(annotations)
    disruptions, disruption_problems = uncounted_disruptions(annotations)
    problems = [*problems, *set_problems, *backoff_problems, *disruption_problems]
    if problems:
        return Rejected(tuple(problems))
    return Admitted(
        spec, exit_codes=sets, restart_backoff=backoff, uncounted_disruptions=disruptions
    )
