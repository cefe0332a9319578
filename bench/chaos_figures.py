"""Where the API budget goes under churn: the chaos run's figures.

From one run:

- the decision-to-action lag: for every decision carried out, the seconds from its cause
  (the change the watchers saw) to the actuator's `lag` log line, p50/p90/p99/max over
  the run and per minute of it, and the slowest 1% and 5% taken apart (`chaos_lag`);
- API calls by verb, resource and purpose as the API server served them (`GET
  /sim/state`, the run's own requests taken off), and per job;
- from each replica's `/metrics`, scraped every second (a SIGKILL loses at most the last
  second of a replica's counters): API requests sent by purpose (retries included),
  retries, seconds spent waiting for the rate limiter, decisions queued in the lanes and
  the longest lane.
"""

from __future__ import annotations

import asyncio
import math
import os
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.chaos_lag import PARTS, SHARES, Breakdown, CarriedOut, break_down, slowest
from bench.harness import Cluster, LavalogRun, say, table
from lavalog.controller.actuator.core.calls import purpose_of

WINDOW = 60.0
SCRAPE_EVERY = 1.0
#: the actuator's metrics the figures use (counters summed over a replica's restarts)
COUNTERS = ("applied", "retried", "failed", "coalesced", "limiter_wait_seconds")
GAUGES = ("queued", "deepest_lane", "lanes")


def load() -> str:
    """The machine's load average (1, 5, 15 minutes), as `uptime` prints it."""
    return ", ".join(f"{value:.2f}" for value in os.getloadavg())


@dataclass
class Sample:
    at: float
    #: (replica, port): a restarted replica is another incarnation, its counters from 0
    incarnation: tuple[str, int]
    values: dict[str, float]


class MetricsFollower:
    """Scrapes every replica's `/metrics` while the run goes on."""

    def __init__(self, replicas: Sequence[LavalogRun]) -> None:
        self.replicas = replicas
        self.samples: list[Sample] = []

    async def follow(self) -> None:
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=2)) as http:
            while True:
                for index, replica in enumerate(self.replicas):
                    if not replica.running:
                        continue
                    try:
                        async with http.get(f"http://127.0.0.1:{replica.port}/metrics") as got:
                            text = await got.text()
                    except (aiohttp.ClientError, TimeoutError):
                        continue  # killed, or not serving yet
                    values = parse_metrics(text)
                    self.samples.append(Sample(time.time(), (str(index), replica.port), values))
                await asyncio.sleep(SCRAPE_EVERY)

    def total(self, name: str, until: float = math.inf) -> float:
        """A counter added up over every incarnation of every replica, as of `until`."""
        last: dict[tuple[str, int], float] = {}
        for sample in self.samples:
            if sample.at <= until and name in sample.values:
                last[sample.incarnation] = sample.values[name]
        return sum(last.values())

    def delta(self, name: str, start: float, stop: float) -> float:
        """How much a counter grew in [start, stop)."""
        return self.total(name, stop) - self.total(name, start)

    def totals(self, prefix: str) -> dict[str, float]:
        """Every counter whose series name starts with `prefix`, added up likewise."""
        names = {n for s in self.samples for n in s.values if n.startswith(prefix)}
        return {name: self.total(name) for name in sorted(names)}

    def gauge_max(self, name: str, start: float, end: float) -> float:
        """The largest sum over the replicas of a gauge, scrape by scrape, in [start, end)."""
        per_round: dict[int, float] = defaultdict(float)
        for sample in self.samples:
            if start <= sample.at < end and name in sample.values:
                per_round[int(sample.at / SCRAPE_EVERY)] += sample.values[name]
        return max(per_round.values(), default=0.0)


def parse_metrics(text: str) -> dict[str, float]:
    """`name{labels}` -> value, of the `lavalog_actuator_` series of a Prometheus page."""
    values: dict[str, float] = {}
    for line in text.splitlines():
        if not line.startswith("lavalog_actuator_"):
            continue
        series, _, value = line.rpartition(" ")
        values[series.removeprefix("lavalog_actuator_")] = float(value)
    return values


def percentile(values: Sequence[float], share: float) -> float:
    """Nearest-rank percentile of sorted `values` (0 when there are none)."""
    if not values:
        return 0.0
    return values[min(len(values) - 1, max(0, math.ceil(share * len(values)) - 1))]


def lag_summary(values: Iterable[float]) -> str:
    ordered = sorted(values)
    if not ordered:
        return "-"
    parts = [percentile(ordered, p) for p in (0.5, 0.9, 0.99)]
    return "/".join(f"{v:.1f}" for v in [*parts, ordered[-1]])


@dataclass
class Figures:
    """What one run measured."""

    label: str
    jobs: int
    started: float
    #: first submission to every job finished (or the run gave up)
    seconds: float
    unfinished: int
    load_before: str
    load_after: str
    actions: list[CarriedOut] = field(default_factory=list)
    #: decision id -> when the deciders decided it (`chaos_lag.read_logs`)
    decided: dict[str, list[float]] = field(default_factory=dict)
    #: when a replica was SIGKILLed
    kills: list[float] = field(default_factory=list)
    #: "verb resource" -> requests the API server served for the controllers
    served: dict[str, int] = field(default_factory=dict)
    metrics: MetricsFollower | None = None


async def served_calls(cluster: Cluster, own: Counter[str]) -> dict[str, int]:
    """The API server's count of requests served, by "verb resource", minus `own`."""
    async with aiohttp.ClientSession() as http, http.get(f"{cluster.url}/sim/state") as got:
        counted: dict[str, int] = (await got.json())["apiCalls"]
    return {key: n - own[key] for key, n in counted.items() if n - own[key] > 0}


def print_figures(runs: Sequence[Figures]) -> None:
    """The runs side by side, then each run over time."""
    if not runs:
        return
    header = ["figure", *(f.label for f in runs)]
    rows: list[list[str]] = []

    def row(name: str, cells: Iterable[str]) -> None:
        rows.append([name, *cells])

    row("jobs", (str(f.jobs) for f in runs))
    row("load average before (1, 5, 15 min)", (f.load_before for f in runs))
    row("load average after", (f.load_after for f in runs))
    row("first submission to all finished (s)", (f"{f.seconds:.0f}" for f in runs))
    row("jobs unfinished at the end", (str(f.unfinished) for f in runs))
    row("decisions carried out", (str(len(f.actions)) for f in runs))
    row("lag p50/p90/p99/max (s)", (lag_summary(a.lag for a in f.actions) for f in runs))
    for kinds, name in (
        (("PodsCreate", "PodsReplace", "PodGroupCreate"), "  creates"),
        (("PodsKill",), "  kills"),
        (("StatusWrite",), "  status writes"),
    ):
        row(
            f"{name} lag (s)",
            (lag_summary(a.lag for a in f.actions if a.kind in kinds) for f in runs),
        )
    purposes = sorted({purpose_of(*k.split(" ", 1)).value for f in runs for k in f.served})
    row("API requests served", (str(sum(f.served.values())) for f in runs))
    row("  per job", (f"{sum(f.served.values()) / max(f.jobs, 1):.1f}" for f in runs))
    for purpose in purposes:
        row(f"  {purpose}", (_by_purpose(f, purpose) for f in runs))
    row("actuator requests sent (retries in)", (_metric(f, "api_calls_total", sum) for f in runs))
    for counter in COUNTERS:
        row(f"actuator {counter}", (_metric(f, f"{counter}_total") for f in runs))
    row("max decisions queued (lanes)", (_gauge(f, "queued") for f in runs))
    row("max longest lane", (_gauge(f, "deepest_lane") for f in runs))
    table(header, rows)
    _print_slowest(runs)
    for figures in runs:
        _print_served(figures)
        _print_over_time(figures)


def _print_slowest(runs: Sequence[Figures]) -> None:
    """The slowest decisions of each run taken apart: where their lag went, on average."""
    header = ["slowest decisions"]
    taken: list[Breakdown] = []
    for figures in runs:
        for share in SHARES:
            header.append(f"{figures.label}: {share:.0%}")
            taken.append(
                break_down(slowest(figures.actions, share), figures.decided, figures.kills)
            )
    rows = [
        ["decisions", *(str(b.count) for b in taken)],
        ["lag from (s)", *(f"{b.lag_from:.1f}" for b in taken)],
    ]
    rows += [[f"  {part} (s, mean)", *(f"{b.seconds[part]:.1f}" for b in taken)] for part in PARTS]
    rows += [
        ["decided again after a restart", *(str(b.decided_again) for b in taken)],
        ["a replica killed before received", *(str(b.across_a_kill) for b in taken)],
        ["with a call retried", *(str(b.retried) for b in taken)],
    ]
    for kind in sorted({k for b in taken for k in b.kinds}):
        rows.append([f"kind {kind}", *(str(b.kinds[kind]) for b in taken)])
    table(header, rows)


def _by_purpose(figures: Figures, purpose: str) -> str:
    count = sum(n for k, n in figures.served.items() if purpose_of(*k.split(" ", 1)) == purpose)
    return f"{count} ({count / max(figures.jobs, 1):.1f}/job)"


def _metric(figures: Figures, name: str, combine: object = None) -> str:
    if figures.metrics is None:
        return "-"
    if combine is sum:
        total = sum(figures.metrics.totals(name.removesuffix("_total")).values())
    else:
        total = figures.metrics.total(name)
    return f"{total:.1f}" if not float(total).is_integer() else str(int(total))


def _gauge(figures: Figures, name: str) -> str:
    if figures.metrics is None:
        return "-"
    return str(int(figures.metrics.gauge_max(name, 0, math.inf)))


def _print_served(figures: Figures) -> None:
    rows = sorted(figures.served.items(), key=lambda item: -item[1])
    table(
        [f"{figures.label}: served by verb, resource", "purpose", "requests", "per job"],
        [
            [key, purpose_of(*key.split(" ", 1)).value, str(n), f"{n / max(figures.jobs, 1):.2f}"]
            for key, n in rows
        ],
    )


def _print_over_time(figures: Figures) -> None:
    end = figures.started + figures.seconds
    windows = max(1, math.ceil(figures.seconds / WINDOW))
    rows = []
    metrics = figures.metrics
    for index in range(windows):
        start = figures.started + index * WINDOW
        stop = min(end, start + WINDOW)
        lags = [a.lag for a in figures.actions if start <= a.at < stop]
        retried = waited = queued = "-"
        if metrics is not None:
            retried = f"{metrics.delta('retried_total', start, stop):.0f}"
            waited = f"{metrics.delta('limiter_wait_seconds_total', start, stop):.0f}"
            queued = str(int(metrics.gauge_max("queued", start, stop)))
        rows.append(
            [
                f"{index * WINDOW:.0f}-{(index + 1) * WINDOW:.0f}",
                str(len(lags)),
                lag_summary(lags),
                queued,
                retried,
                waited,
            ]
        )
    table(
        [
            f"{figures.label}: s",
            "carried out",
            "lag p50/p90/p99/max",
            "max queued",
            "retries",
            "limiter wait (s)",
        ],
        rows,
    )
    if figures.unfinished:
        say(f"{figures.label}: {figures.unfinished} jobs unfinished")
