"""`/healthz`, `/readyz` and `/metrics` of a controller process.

Healthy: every component task is still running. Ready: every component says it is
(in its consumer group, watching or standing by as a follower). Metrics: each
component's counters, as Prometheus counters named `lavalog_<component>_<counter>`,
then the Volcano metrics a component keeps (`volcano_metrics`, the decider's), in
Volcano's own names.

Who may call them: the probes always (the kubelet's carry no token); `/metrics`, with an
authenticator (`lavalog run --kubernetes-auth`), a caller whose Kubernetes token RBAC lets
`get` the path, as the projections' `/metrics` (the middleware of controller/auth).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Mapping
from dataclasses import asdict, is_dataclass
from typing import Any, Protocol

from aiohttp import web
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from lavalog.controller.auth.middleware import Access, Authenticator, auth_middleware

#: who may call each path (anything else: a valid token, then a 404)
ACCESS = {"/healthz": Access.PROBE, "/readyz": Access.PROBE, "/metrics": Access.METRICS}


class Component(Protocol):
    @property
    def ready(self) -> bool: ...


class Health:
    """The components of one process and the tasks running them."""

    def __init__(self) -> None:
        self.components: dict[str, Component] = {}
        self.tasks: dict[str, asyncio.Task[None]] = {}

    def healthy(self) -> bool:
        return all(not task.done() for task in self.tasks.values())

    def ready(self) -> bool:
        return self.healthy() and all(c.ready for c in self.components.values())


class _Counters(Collector):
    def __init__(self, health: Health) -> None:
        self.health = health

    def collect(self) -> Iterator[CounterMetricFamily | GaugeMetricFamily]:
        for name, component in self.health.components.items():
            ready = GaugeMetricFamily(
                f"lavalog_{name}_ready", f"1 when the {name} is ready", value=int(component.ready)
            )
            yield ready
            is_leader = getattr(component, "is_leader", None)
            if is_leader is not None:
                yield GaugeMetricFamily(
                    f"lavalog_{name}_leader",
                    "1 while this replica holds the leader Lease",
                    value=int(is_leader),
                )
            lag = getattr(component, "lag", None)
            if callable(lag):
                yield _lag_family(name, lag())
            gauges = getattr(component, "gauges", None)
            if callable(gauges):
                for gauge, value in gauges().items():
                    yield GaugeMetricFamily(f"lavalog_{name}_{gauge}", f"{name}: {gauge}", value)
            api_calls = getattr(component, "api_calls", None)
            if callable(api_calls):
                yield _api_calls_family(name, api_calls())
            for counter, value in _counters(getattr(component, "counters", {})).items():
                yield CounterMetricFamily(
                    f"lavalog_{name}_{counter}", f"{name}: {counter}", value=value
                )


def _lag_family(name: str, lag: Mapping[int, int]) -> GaugeMetricFamily:
    family = GaugeMetricFamily(
        f"lavalog_{name}_lag",
        f"{name}: messages published and not yet processed, per partition",
        labels=["partition"],
    )
    for partition, behind in sorted(lag.items()):
        family.add_metric([str(partition)], behind)
    return family


def _api_calls_family(name: str, calls: Mapping[tuple[str, str, str], int]) -> CounterMetricFamily:
    family = CounterMetricFamily(
        f"lavalog_{name}_api_calls",
        f"{name}: Kubernetes API requests sent, retries included",
        labels=["verb", "resource", "purpose"],
    )
    for labels, count in sorted(calls.items()):
        family.add_metric(list(labels), count)
    return family


def _counters(counters: Any) -> Mapping[str, int]:
    if is_dataclass(counters) and not isinstance(counters, type):
        return asdict(counters)
    return dict(counters)


def health_app(health: Health, *, authenticator: Authenticator | None = None) -> web.Application:
    """The three paths; with an `authenticator`, /metrics only for a caller it lets get it."""
    registry = CollectorRegistry()
    registry.register(_Counters(health))

    async def healthz(request: web.Request) -> web.Response:
        ok = health.healthy()
        return web.Response(status=200 if ok else 503, text="ok\n" if ok else "a component died\n")

    async def readyz(request: web.Request) -> web.Response:
        states = {name: c.ready for name, c in health.components.items()}
        ok = health.ready()
        text = "".join(f"{name}: {'ready' if r else 'not ready'}\n" for name, r in states.items())
        return web.Response(status=200 if ok else 503, text=text)

    async def metrics(request: web.Request) -> web.Response:
        volcano = "".join(
            metrics.exposition()
            for component in health.components.values()
            if (metrics := getattr(component, "volcano_metrics", None)) is not None
        )
        body = generate_latest(registry) + volcano.encode()
        return web.Response(body=body, content_type="text/plain")

    app = web.Application(middlewares=[auth_middleware(authenticator, access_of=_access_of)])
    app.add_routes(
        [web.get("/healthz", healthz), web.get("/readyz", readyz), web.get("/metrics", metrics)]
    )
    return app


def _access_of(request: web.Request) -> Access:
    return ACCESS.get(request.path, Access.READ)
