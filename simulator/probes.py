"""Container probes as a kubelet runs them: startupProbe, readinessProbe, livenessProbe.

A probe's timing fields are honoured in simulated time: the first probe runs
`initialDelaySeconds` after the container started, then one every `periodSeconds`;
its verdict changes only after `successThreshold` successes or `failureThreshold`
failures in a row (pkg/kubelet/prober/worker.go `doProbe`). Until a verdict, a
container is not started (startup), not ready (readiness) and alive (liveness), as
`newWorker`'s initial values say; readiness and liveness probes wait until the
container has started.

What a probe answers is scripted as a container's command is (`commands.py`): an
`exec` probe runs its command, exit 0 is a success and anything else a failure whose
output is the command's `echo`s, and a command still running after `timeoutSeconds`
fails with `command "..." timed out`. So `exec: {command: ["true"]}` with
`initialDelaySeconds: 30` makes a container ready 30 s after it starts, and
`["false"]` one that runs but is never ready. An executable path answers at once with
success (the image's health-check program). `httpGet`, `tcpSocket` and `grpc` probes
succeed while the container runs: no network is simulated.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from lavalog.simulator import commands
from lavalog.simulator.clock import SimClock


class ProbeKind(StrEnum):
    """The probe types, spelt as the kubelet's Events spell them."""

    STARTUP = "Startup"
    READINESS = "Readiness"
    LIVENESS = "Liveness"

    @property
    def field(self) -> str:
        return self.value.lower() + "Probe"


#: the API server's defaults for a probe's timing (pkg/apis/core/v1/defaults.go
#: `SetDefaults_Probe`)
DEFAULTS = {"timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3}
#: a worker's verdict before its first one (`newWorker`'s initialValue): not started yet,
#: not ready, alive
_INITIAL: dict[ProbeKind, bool | None] = {
    ProbeKind.STARTUP: None,
    ProbeKind.READINESS: False,
    ProbeKind.LIVENESS: True,
}


@dataclass(frozen=True, slots=True)
class Probe:
    """One of a container's probes, with the API server's defaults filled in."""

    kind: ProbeKind
    #: the exec command, or None for a network probe (answered while the container runs)
    command: tuple[str, ...] | None
    initial_delay: float
    period: float
    timeout: float
    success_threshold: int
    failure_threshold: int

    @classmethod
    def of(cls, kind: ProbeKind, spec: Mapping[str, Any]) -> Probe:
        timing = {**DEFAULTS, **{k: v for k, v in spec.items() if v is not None}}
        exec_ = spec.get("exec")
        return cls(
            kind=kind,
            command=tuple((exec_ or {}).get("command") or ()) if exec_ is not None else None,
            initial_delay=float(timing.get("initialDelaySeconds") or 0),
            period=float(timing["periodSeconds"]),
            timeout=float(timing["timeoutSeconds"]),
            success_threshold=int(timing["successThreshold"]),
            failure_threshold=int(timing["failureThreshold"]),
        )


def probes_of(container: Mapping[str, Any]) -> list[Probe]:
    """The probes a container declares, startup first."""
    return [
        Probe.of(kind, container[kind.field])
        for kind in ProbeKind
        if container.get(kind.field) is not None
    ]


@dataclass(slots=True)
class Verdict:
    """What one probe currently says of one container incarnation, and how many equal
    results in a row led there (`worker.lastResult`, `worker.resultRun`)."""

    probe: Probe
    result: bool | None = None
    last: bool = True  # Go's zero probe result is Success
    run: int = 0

    def __post_init__(self) -> None:
        self.result = _INITIAL[self.probe.kind]

    def record(self, ok: bool) -> bool:
        """Count one probe result; True when the verdict changes (`doProbe`)."""
        if ok == self.last:
            self.run += 1
        else:
            self.last, self.run = ok, 1
        needed = self.probe.success_threshold if ok else self.probe.failure_threshold
        if self.run < needed or self.result == ok:
            return False
        self.result = ok
        return True


async def execute(probe: Probe, clock: SimClock) -> tuple[bool, str]:
    """Run the probe once: (success, output) as the exec prober reports them."""
    if probe.command is None:
        return True, ""
    output: list[str] = []
    run = asyncio.ensure_future(
        commands.run(
            commands.parse(probe.command, None),
            sleep=clock.sleep,
            log=output.append,
            default_seconds=0.0,
        )
    )
    timer = asyncio.ensure_future(clock.sleep(probe.timeout))
    try:
        await asyncio.wait({run, timer}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        timer.cancel()
        if not run.done():
            run.cancel()
    if run.cancelled() or not run.done():
        return False, f'command "{" ".join(probe.command)}" timed out'
    return run.result() == 0, "".join(line + "\n" for line in output)
