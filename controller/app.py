"""The controller process: watchers, decider and actuator over one Kafka and one cluster.

`run_controller` is what `lavalog run` and `lavalog demo` start. Components run as tasks
side by side; if one dies the process stops (and is restarted by its supervisor), and on
SIGTERM every component stops cleanly: the decider snapshots, the actuator finishes what
it started, offsets are committed. Its `/metrics` answers other machines only when each
caller is authenticated (`check_exposure`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import structlog
from aiohttp import web

from lavalog.controller.actuator.service.ratelimit import DEFAULT_BURST, DEFAULT_QPS
from lavalog.controller.actuator.service.runner import ActuatorService
from lavalog.controller.auth.kubernetes import KubernetesAuth
from lavalog.controller.auth.middleware import is_loopback
from lavalog.controller.decider.service.runner import DeciderService
from lavalog.controller.event_loop import running_loop
from lavalog.controller.health import Component, Health, health_app
from lavalog.controller.kafka import KafkaSettings, ensure_topics
from lavalog.controller.kafka.local_delivery import LocalDelivery
from lavalog.controller.kafka.probe import check_connection
from lavalog.controller.kube import CONTROLLER, Kube, connect
from lavalog.controller.watchers.core.lease import LeaseTiming
from lavalog.controller.watchers.service.runner import WatcherService
from lavalog.events.observations import MAX_REQUEUE_NUM

log = structlog.get_logger("lavalog")

COMPONENTS = ("watchers", "decider", "actuator")


def default_identity() -> str:
    """This replica's name in the leader Lease and in its consumer groups.

    In a pod, the pod name (`POD_NAME` from the downward API, else the hostname
    Kubernetes gives the pod): a container restarted in its pod keeps it, and so takes
    its Lease and its group members' place back at once. Elsewhere host and process id,
    since two processes on one machine must never share a name.
    """
    if pod := os.environ.get("POD_NAME"):
        return pod
    if os.environ.get("KUBERNETES_SERVICE_HOST"):
        return socket.gethostname()
    return f"{socket.gethostname()}-{os.getpid()}"


@dataclass(frozen=True, kw_only=True)
class ControllerConfig:
    kafka: KafkaSettings
    #: None: the in-cluster service account
    kubeconfig: str | None = None
    #: who named `kubeconfig` ("--kubeconfig", "$KUBECONFIG", ...), for error messages
    kubeconfig_origin: str = "--kubeconfig"
    #: None: every namespace
    namespace: str | None = None
    identity: str = field(default_factory=default_identity)
    components: tuple[str, ...] = COMPONENTS
    http_host: str = "127.0.0.1"
    #: 0 picks a free port; None serves no HTTP
    http_port: int | None = 8080
    #: /metrics for a caller whose Kubernetes token RBAC lets get it (the probes stay open);
    #: without it, `http_host` must be a loopback address
    kubernetes_auth: bool = False
    #: the actuator's API budget (`--kube-api-qps`, `--kube-api-burst`)
    qps: float = DEFAULT_QPS
    burst: int = DEFAULT_BURST
    #: `--max-requeue-num`: refused creates in a row before a job is terminated
    max_requeues: int = MAX_REQUEUE_NUM
    #: `--phase-events`: a Kubernetes Event on the Job for each phase change (Volcano writes none)
    phase_events: bool = False
    lease_namespace: str = "default"
    lease: LeaseTiming = field(default_factory=LeaseTiming)


async def run_controller(
    config: ControllerConfig,
    *,
    stop: asyncio.Event | None = None,
    on_started: Callable[[Health, int | None], None] | None = None,
) -> None:
    """Run until `stop` is set (or forever) or a component fails; then stop them all."""
    unknown = set(config.components) - set(COMPONENTS)
    if unknown:
        raise ValueError(f"unknown components {sorted(unknown)}; choose from {COMPONENTS}")
    if config.http_port is not None:
        check_exposure(config.http_host, authenticated=config.kubernetes_auth)
    async with connect(
        config.kubeconfig, origin=config.kubeconfig_origin, client=CONTROLLER
    ) as kube:
        await check_connection(config.kafka)
        await ensure_topics(config.kafka)
        health = Health()
        local = LocalDelivery.for_settings(config.kafka)
        for name in config.components:
            component = _build(name, kube, config, local)
            health.components[name] = component
            health.tasks[name] = asyncio.create_task(component.run(), name=name)
        runner, port = await _serve_health(health, config, kube)
        log.info(
            "controller started",
            components=list(config.components),
            event_loop=running_loop(),
            http_host=config.http_host if port is not None else None,
            http_port=port,
            http_access=_who_may_call(config) if port is not None else None,
        )
        if on_started is not None:
            on_started(health, port)
        try:
            await _until_stopped_or_failed(health, stop)
        finally:
            await _stop_components(health)
            if runner is not None:
                await runner.cleanup()
            log.info("controller stopped")


class Service(Component, Protocol):
    async def run(self) -> None: ...


def _build(name: str, kube: Kube, config: ControllerConfig, local: LocalDelivery | None) -> Service:
    """`local`: shared by the components of this process, so that what one delivers the
    next takes at once (`local_delivery`)."""
    # group members named after the identity: a restart takes its predecessor's place
    kafka = dataclasses.replace(config.kafka, group_instance_id=config.identity)
    if name == "watchers":
        return WatcherService(
            kube=kube,
            kafka=config.kafka,
            namespace=config.namespace,
            identity=config.identity,
            lease_namespace=config.lease_namespace,
            lease=config.lease,
            local=local,
        )
    if name == "decider":
        return DeciderService(kafka=kafka, local=local)
    return ActuatorService(
        kube=kube,
        kafka=kafka,
        qps=config.qps,
        burst=config.burst,
        namespace=config.namespace,
        max_requeues=config.max_requeues,
        phase_events=config.phase_events,
        local=local,
    )


#: how long the components may take to stop cleanly (the actuator drains up to 30 s)
STOP_SECONDS = 45.0


async def _stop_components(health: Health) -> None:
    """Cancel every component and wait for them, but not for ever: one that does not stop
    in time is named in the log and left behind (the process is exiting)."""
    for task in health.tasks.values():
        task.cancel()
    _, pending = await asyncio.wait(health.tasks.values(), timeout=STOP_SECONDS)
    for name, task in health.tasks.items():
        if task in pending:
            log.error("component did not stop in time", component=name, seconds=STOP_SECONDS)
        elif not task.cancelled() and task.exception() is not None:
            log.error("component failed", component=name, error=repr(task.exception()))


async def _until_stopped_or_failed(health: Health, stop: asyncio.Event | None) -> None:
    stopper = asyncio.create_task((stop or asyncio.Event()).wait(), name="stop")
    waiters: set[asyncio.Task[Any]] = {*health.tasks.values(), stopper}
    try:
        done, _ = await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopper.cancel()
    for task in done:
        if task is not stopper and not task.cancelled() and task.exception() is not None:
            raise RuntimeError(f"component {task.get_name()} failed") from task.exception()


def check_exposure(host: str, *, authenticated: bool) -> None:
    """Refuse to serve /metrics to other machines without authentication (ValueError):
    an authenticating proxy in the pod (kube-rbac-proxy) reaches it on the loopback."""
    if authenticated or is_loopback(host):
        return
    raise ValueError(
        f"--http-host {host or '0.0.0.0'} would serve the controller's /metrics to any machine"
        " that can reach it, unauthenticated: pass --kubernetes-auth (Kubernetes tokens and"
        " RBAC; /healthz and /readyz stay open), or keep the default --http-host 127.0.0.1"
    )


def _who_may_call(config: ControllerConfig) -> str:
    if config.kubernetes_auth:
        return f"Kubernetes tokens and RBAC, reviewed by {config.kubeconfig_origin}"
    return "no authentication: this machine only"


async def _serve_health(
    health: Health, config: ControllerConfig, kube: Kube
) -> tuple[web.AppRunner | None, int | None]:
    if config.http_port is None:
        return None, None
    authenticator = KubernetesAuth(kube) if config.kubernetes_auth else None
    runner = web.AppRunner(health_app(health, authenticator=authenticator), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, config.http_host, config.http_port)
    await site.start()
    port: int = runner.addresses[0][1]
    return runner, port
