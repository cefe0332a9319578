"""`SimulatedCluster`: the API server, scheduler, kubelet and garbage collector in one
async context manager, listening on 127.0.0.1.

    async with SimulatedCluster(nodes=2, time_scale=50) as cluster:
        cluster.url, cluster.kubeconfig_path   # for kubernetes-asyncio or kubectl
        cluster.admin.lose_node("node-1")      # faults, time, state (see admin.py)
"""

from __future__ import annotations

import tempfile
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType

from aiohttp import web

from lavalog.simulator import kubeconfig, openapi, registry
from lavalog.simulator.access import AccessListener
from lavalog.simulator.admin import Admin
from lavalog.simulator.api import KubeApi, errors_middleware
from lavalog.simulator.clock import SimClock
from lavalog.simulator.faults import ApiFaults
from lavalog.simulator.gc import GarbageCollector
from lavalog.simulator.kubelet import Kubelet
from lavalog.simulator.objects import Objects
from lavalog.simulator.quota import QuotaAdmission, QuotaController
from lavalog.simulator.reviews import Reviews, Tokens
from lavalog.simulator.scheduler import Scheduler
from lavalog.simulator.store import Store
from lavalog.simulator.taints import TaintEviction
from lavalog.simulator.volumes import VolumeBinder
from lavalog.simulator.writes import WriteListener, WriteLog

DEFAULT_CAPACITY = {"cpu": "8", "memory": "32Gi", "nvidia.com/gpu": "8", "pods": "110"}
NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease", "volcano-system")


class SimulatedCluster:
    """A running simulated cluster; use as `async with SimulatedCluster(...) as cluster`."""

    def __init__(
        self,
        *,
        nodes: int = 2,
        node_capacity: Mapping[str, str] | None = None,
        time_scale: float = 1.0,
        port: int = 0,
        kubeconfig_path: str | Path | None = None,
        history_size: int = 100_000,
        bookmark_interval: float = 1.0,
        default_run_seconds: float = 5.0,
        api_faults: ApiFaults | None = None,
    ) -> None:
        self.clock = SimClock(time_scale)
        self.store = Store(history_size=history_size)
        self.objects = Objects(self.store, self.clock)
        self.faults = api_faults or ApiFaults()
        self.kubelet = Kubelet(self.objects, default_run_seconds=default_run_seconds)
        self.scheduler = Scheduler(self.objects)
        self._gc = GarbageCollector(self.objects)
        self._volumes = VolumeBinder(self.objects)
        self.objects.admission.append(QuotaAdmission(self.objects))
        self._quotas = QuotaController(self.objects)
        self._taints = TaintEviction(self.objects)
        self.api_calls: Counter[str] = Counter()
        self.api_refusals: Counter[str] = Counter()
        self._writes = WriteLog()
        self._access: list[AccessListener] = []
        self.admin = Admin(
            self.objects, self.kubelet, self.faults, self.api_calls, self.api_refusals
        )
        #: the bearer tokens it authenticates (TokenReview); RBAC decides what they may do
        self.tokens = Tokens(self.objects)
        self._nodes = nodes
        self._capacity = {**DEFAULT_CAPACITY, **(node_capacity or {})}
        self._port = port
        self._kubeconfig_arg = Path(kubeconfig_path) if kubeconfig_path else None
        self._tmpdir: tempfile.TemporaryDirectory[str] | None = None
        self._runner: web.AppRunner | None = None
        self._bookmark_interval = bookmark_interval
        self.url = ""
        self.kubeconfig_path = Path()

    async def start(self) -> None:
        for name in NAMESPACES:
            self.objects.create(registry.NAMESPACE, "", {"metadata": {"name": name}})
        self.objects.create(
            registry.QUEUE,
            "",
            {"metadata": {"name": "default"}, "spec": {"weight": 1, "reclaimable": True}},
        )
        for i in range(1, self._nodes + 1):
            self.kubelet.add_node(f"node-{i}", self._capacity)
        reviews = Reviews(self.objects, self.tokens)
        api = KubeApi(
            self.objects,
            logs=self.kubelet.logs,
            bookmark_interval=self._bookmark_interval,
            calls=self.api_calls,
            refused=self.api_refusals,
            writes=self._writes,
            access=self._access,
            token_requests=reviews.token_request,
            callers=reviews.caller,
        )
        app = web.Application(
            middlewares=[errors_middleware, self.faults.middleware], client_max_size=64 * 2**20
        )
        app.add_routes(self.admin.routes())
        app.add_routes(reviews.routes())
        app.add_routes(api.routes())
        app.add_routes(openapi.routes())
        self._runner = web.AppRunner(app, handler_cancellation=True, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", self._port)
        await site.start()
        port = self._runner.addresses[0][1]
        self.url = f"http://127.0.0.1:{port}"
        if self._kubeconfig_arg is None:
            self._tmpdir = tempfile.TemporaryDirectory(prefix="lavalog-sim-")
            self._kubeconfig_arg = Path(self._tmpdir.name) / "kubeconfig"
        self.kubeconfig_path = kubeconfig.write(self._kubeconfig_arg, self.url)
        self._gc.start()
        self._volumes.start()
        self._quotas.start()
        self._taints.start()
        self.scheduler.start()
        self.kubelet.start()

    def on_write(self, listener: WriteListener) -> None:
        """Call `listener` with every create, update and patch served over HTTP, as sent
        and as stored (see `lavalog.simulator.writes`)."""
        self._writes.listeners.append(listener)

    def on_request(self, listener: AccessListener) -> None:
        """Call `listener` with every request to a resource served over HTTP, in RBAC's
        terms (see `lavalog.simulator.access`)."""
        self._access.append(listener)

    async def stop(self) -> None:
        await self.kubelet.stop()
        await self.scheduler.stop()
        await self._gc.stop()
        await self._volumes.stop()
        await self._quotas.stop()
        await self._taints.stop()
        self.store.drop_watches()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self._tmpdir is not None:
            self._tmpdir.cleanup()
            self._tmpdir = None

    async def __aenter__(self) -> SimulatedCluster:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()
