"""Volcano's job-controller metrics, kept from what the decider decides, so that dashboards
and alerts built on Volcano's keep working against lavalog:

- `volcano_job_completed_phase_count{job_name, queue_name}` and
  `volcano_job_failed_phase_count{job_name, queue_name}`: counters of a job entering
  Completed or Failed, by `namespace/name` and queue, where Volcano counts them
  (`state/metrics.go`: Running or Completing to Completed, Running or Restarting to
  Failed); a deleted Job's series go (`DeleteJobMetrics`);
- `volcano_controller_job_to_pod_creation_latency_milliseconds`: a histogram of each pod's
  creationTimestamp minus its Job's, for the pods the controller made
  (`metrics/job.go`), with Volcano's buckets (`ExponentialBucketsRange(50, 60000, 30)`).

Written in Prometheus' text format as Volcano's Go client writes them: a counter keeps its
name (no `_total`). Pure: the decider service feeds it and `/metrics` prints it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from decimal import Decimal

from lavalog.controller.decider.core.state import JobState
from lavalog.events.decisions import AnyDecision, PhaseChanged
from lavalog.events.observations import AnyObservation, JobDeleted, PodObserved
from lavalog.events.volcano.api import JobPhase

COMPLETED = "volcano_job_completed_phase_count"
FAILED = "volcano_job_failed_phase_count"
LATENCY = "volcano_controller_job_to_pod_creation_latency_milliseconds"
_HELP = {
    COMPLETED: "Number of job completed phase",
    FAILED: "Number of job failed phase",
    LATENCY: "Latency from VCJob creation to pod created in milliseconds",
}
#: (phase entered, phases Volcano counts it from) -> its counter
_COUNTED = {
    JobPhase.COMPLETED: (COMPLETED, frozenset({JobPhase.RUNNING, JobPhase.COMPLETING})),
    JobPhase.FAILED: (FAILED, frozenset({JobPhase.RUNNING, JobPhase.RESTARTING})),
}


def go_pow(x: float, y: float) -> float:
    """Go's `math.Pow` for x > 0 and y >= 0: the fraction of `y` through exp and log, its
    integer part by repeated squaring of the mantissa, as Go computes it (so bucket
    bounds come out as Volcano's, to the last digit its exposition prints)."""
    if y == 0 or x == 1:
        return 1.0
    if y == 1:
        return x
    if y == 0.5:
        return math.sqrt(x)
    whole, fraction = int(y), y - int(y)
    product, exponent = 1.0, 0
    if fraction != 0:
        if fraction > 0.5:
            fraction -= 1
            whole += 1
        product = math.exp(fraction * math.log(x))
    mantissa, power = math.frexp(x)
    while whole != 0:
        if whole & 1:
            product *= mantissa
            exponent += power
        mantissa *= mantissa
        power <<= 1
        if mantissa < 0.5:
            mantissa += mantissa
            power -= 1
        whole >>= 1
    return math.ldexp(product, exponent)


def exponential_buckets_range(lowest: float, highest: float, count: int) -> tuple[float, ...]:
    """client_golang's `ExponentialBucketsRange`: `count` bounds from `lowest` to `highest`."""
    growth = go_pow(highest / lowest, 1.0 / (count - 1))
    return tuple(lowest * go_pow(growth, index) for index in range(count))


LATENCY_BUCKETS = exponential_buckets_range(50, 60000, 30)


class VolcanoMetrics:
    """The three series, as the decider has decided so far (since this process started,
    as Volcano's are since its controller started)."""

    def __init__(self) -> None:
        #: counter name -> (job_name, queue_name) -> count
        self.phases: dict[str, dict[tuple[str, str], int]] = {COMPLETED: {}, FAILED: {}}
        self.buckets = [0] * len(LATENCY_BUCKETS)
        self.latency_count = 0
        self.latency_sum = 0.0

    def record(
        self,
        before: JobState | None,
        observation: AnyObservation,
        decisions: Sequence[AnyDecision],
        after: JobState | None,
    ) -> None:
        """Count what deciding `observation` did, given the job's state before and after."""
        if type(observation) is JobDeleted:
            for series in self.phases.values():
                for key in [key for key in series if key[0] == observation.key]:
                    del series[key]
            return
        state = after or before
        queue = state.spec.queue if state is not None and state.spec is not None else ""
        for decision in decisions:
            if type(decision) is PhaseChanged and decision.phase in _COUNTED:
                counter, sources = _COUNTED[JobPhase(decision.phase)]
                if decision.previous in sources:
                    series = self.phases[counter]
                    series[(decision.key, queue)] = series.get((decision.key, queue), 0) + 1
        if type(observation) is PodObserved and before is not None:
            self._pod_made(before, observation)

    def _pod_made(self, before: JobState, pod: PodObserved) -> None:
        """A pod the decider asked for, seen for the first time: made since the last fact."""
        requested = before.pods.get(pod.pod)
        if requested is None or requested.uid or pod.created is None or before.created is None:
            return
        milliseconds = (pod.created - before.created) * 1000
        self.latency_count += 1
        self.latency_sum += milliseconds
        for index, bound in enumerate(LATENCY_BUCKETS):
            if milliseconds <= bound:
                self.buckets[index] += 1

    def exposition(self) -> str:
        """The three families in Prometheus' text format."""
        lines: list[str] = []
        for counter, series in self.phases.items():
            lines += _header(counter, "counter")
            lines += (
                f"{counter}{_labels(job_name=job, queue_name=queue)} {_number(count)}"
                for (job, queue), count in sorted(series.items())
            )
        lines += _header(LATENCY, "histogram")
        for bound, count in zip(LATENCY_BUCKETS, self.buckets, strict=True):
            lines.append(f"{LATENCY}_bucket{_labels(le=_number(bound))} {_number(count)}")
        lines.append(f'{LATENCY}_bucket{{le="+Inf"}} {_number(self.latency_count)}')
        lines.append(f"{LATENCY}_sum {_number(self.latency_sum)}")
        lines.append(f"{LATENCY}_count {_number(self.latency_count)}")
        return "".join(f"{line}\n" for line in lines)


def _header(name: str, kind: str) -> Iterable[str]:
    return (f"# HELP {name} {_HELP[name]}", f"# TYPE {name} {kind}")


def _labels(**pairs: str) -> str:
    """`{name="value",...}`, names in order, values escaped as the text format wants."""
    escaped = (f'{name}="{_escape(value)}"' for name, value in sorted(pairs.items()))
    return "{" + ",".join(escaped) + "}"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _number(value: float) -> str:
    """A sample value or bound as Go's `strconv.FormatFloat(f, 'g', -1, 64)` prints it:
    the shortest digits, an exponent from 1e6 on and below 1e-4 ("1e+06", "1e-05")."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == 0:
        return "0"
    negative, figures, shift = Decimal(repr(value)).normalize().as_tuple()
    assert isinstance(shift, int)
    digits = "".join(map(str, figures))
    exponent = len(digits) + shift - 1
    if exponent < -4 or exponent >= 6:
        mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        text = f"{mantissa}e{'-' if exponent < 0 else '+'}{abs(exponent):02d}"
    elif exponent < 0:
        text = "0." + "0" * (-exponent - 1) + digits
    elif len(digits) <= exponent + 1:
        text = digits + "0" * (exponent + 1 - len(digits))
    else:
        text = f"{digits[: exponent + 1]}.{digits[exponent + 1 :]}"
    return f"-{text}" if negative else text
