"""`/metrics`: Prometheus figures read from the store at scrape time.

Reading them from the store (instead of counting in memory as events pass) keeps them
right across restarts and rebuilds, and the same on every replica.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector, CollectorRegistry

from lavalog.projections.service.store.queries import Queries

#: Seconds; from a few seconds of queueing to a day-long training run.
TIME_TO_RUNNING_BUCKETS = (1.0, 5.0, 15.0, 30.0, 60.0, 300.0, 900.0, 3600.0, 14400.0)
RUN_TIME_BUCKETS = (10.0, 60.0, 300.0, 900.0, 3600.0, 14400.0, 43200.0, 86400.0, 259200.0)

#: (topic, partition) -> messages not yet consumed
Lag = Callable[[], Mapping[tuple[str, int], int]]


class StoreCollector(Collector):
    def __init__(self, queries: Queries, lag: Lag) -> None:
        self._queries = queries
        self._lag = lag

    def collect(self) -> Iterator[Metric]:
        jobs = GaugeMetricFamily(
            "lavalog_jobs", "Jobs by current phase and queue", labels=["phase", "queue"]
        )
        for phase, queue, count in self._queries.jobs_by_phase_and_queue():
            jobs.add_metric([phase, queue], count)
        yield jobs

        restarts = CounterMetricFamily(
            "lavalog_restarts",
            "Restarts decided, by action and the event that triggered them",
            labels=["action", "reason"],
        )
        for action, trigger, count in self._queries.restarts():
            restarts.add_metric([action, trigger], count)
        yield restarts

        yield _histogram(
            "lavalog_job_time_to_running_seconds",
            "Seconds from submission to the first Running phase",
            self._queries,
            "queue_wait",
            TIME_TO_RUNNING_BUCKETS,
            finished=False,
        )
        yield _histogram(
            "lavalog_job_run_time_seconds",
            "Seconds spent Running by jobs that finished",
            self._queries,
            "run_time",
            RUN_TIME_BUCKETS,
            finished=True,
        )

        lag = GaugeMetricFamily(
            "lavalog_projections_consumer_lag",
            "Messages not yet applied to the store",
            labels=["topic", "partition"],
        )
        for (topic, partition), messages in sorted(self._lag().items()):
            lag.add_metric([topic, str(partition)], messages)
        yield lag


def _histogram(
    name: str,
    documentation: str,
    queries: Queries,
    column: str,
    bounds: tuple[float, ...],
    *,
    finished: bool,
) -> HistogramMetricFamily:
    figures = queries.histogram(column, bounds, finished=finished)
    buckets = [(repr(bound), count) for bound, count in figures.buckets]
    buckets.append(("+Inf", figures.count))
    return HistogramMetricFamily(name, documentation, buckets=buckets, sum_value=figures.total)


def registry_for(queries: Queries, lag: Lag) -> CollectorRegistry:
    """A registry of its own per app, so that several apps (tests) never collide."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(StoreCollector(queries, lag))
    return registry
