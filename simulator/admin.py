"""Fault injection and test control, in process (`cluster.admin`) and over HTTP (`/sim/...`).

Each method is one fault a controller must survive or one lever a test needs; the HTTP
routes are thin wrappers so that out-of-process tests and `lavalog demo` can use them.

    POST /sim/pods/{namespace}/{name}/evict     evict a pod as the Eviction API does
    POST /sim/pods/{namespace}/{name}/preempt   vc-scheduler evicts it (?reason=reclaim)
    POST /sim/pods/{namespace}/{name}/node-pressure   its kubelet evicts it (?resource=)
    POST /sim/pods/{namespace}/{name}/crash     its containers exit (?exitCode=1)
    POST /sim/pods/{namespace}/{name}/oom       the OOM killer ends one (?container=NAME)
    POST /sim/nodes/{name}/lose                 node loss: NotReady, pods fail NodeLost
                                                (?failPods=false: they run on, unreported)
    POST /sim/nodes/{name}/restore              the node comes back
    POST /sim/watches/drop                      close every open watch
    POST /sim/watches/expire                    compact history: old resourceVersions get 410
    POST /sim/watches/fail                      every open watch ends with an ERROR event
                                                (500 InternalError: etcd's watch failed)
    POST /sim/clock/advance   {"seconds": N}    jump simulated time forward
    GET  /sim/faults  | PUT /sim/faults  {"latency": s, "error_rate": p, "throttle_rate": p}
    GET  /sim/state                             resourceVersion, object counts, time, API
                                                requests served by "verb resource"
    GET  /sim/pods/created                      every pod creation (simulator.creations)
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import msgspec
from aiohttp import web

from lavalog.simulator import disruption, registry
from lavalog.simulator.creations import PodCreations
from lavalog.simulator.errors import ApiError, bad_request, internal
from lavalog.simulator.faults import ApiFaults
from lavalog.simulator.kubelet import Kubelet
from lavalog.simulator.objects import Objects
from lavalog.simulator.recorder import EventRecorder
from lavalog.simulator.store import decode, encode

_FAULT_FIELDS = ("latency", "error_rate", "throttle_rate")


class Admin:
    """The levers of the simulated cluster."""

    def __init__(
        self,
        objects: Objects,
        kubelet: Kubelet,
        faults: ApiFaults,
        api_calls: Counter[str],
        api_refusals: Counter[str],
    ) -> None:
        self.objects = objects
        self.kubelet = kubelet
        self.faults = faults
        self.api_calls = api_calls
        self.api_refusals = api_refusals
        self.creations = PodCreations(objects.store)
        self._volcano = EventRecorder(objects, "volcano")

    def evict(self, namespace: str, name: str) -> None:
        """Evict a pod as the Eviction API does: DisruptionTarget (EvictionByEvictionAPI),
        then a graceful delete."""
        disruption.evict_by_api(self.objects, namespace, name, None)

    def preempt(self, namespace: str, name: str, reason: str = "preempt") -> None:
        """Evict a pod as vc-scheduler does to preempt (or, `reason` "reclaim", reclaim)
        for another: DisruptionTarget (PreemptionByScheduler), then a delete."""
        disruption.preempt(self.objects, self._volcano, namespace, name, reason)

    def evict_for_pressure(self, namespace: str, name: str, resource: str = "memory") -> None:
        """Its kubelet evicts a running pod, its node low on `resource`: the pod fails
        with reason Evicted and DisruptionTarget (TerminationByKubelet)."""
        if not self.kubelet.evict(namespace, name, resource):
            raise bad_request(f"pod {namespace}/{name} is not running on any node")

    def crash(self, namespace: str, name: str, exit_code: int = 1) -> None:
        """The pod's running containers exit now with `exit_code`, as a crash would."""
        if not self.kubelet.crash(namespace, name, exit_code):
            raise bad_request(f"pod {namespace}/{name} is not running on any node")

    def oom_kill(self, namespace: str, name: str, container: str) -> None:
        """The kernel's OOM killer ends one running container of the pod (exit code 137,
        reason OOMKilled), as when it outgrows its memory limit."""
        if not self.kubelet.oom_kill(namespace, name, container):
            raise bad_request(f"container {container} of pod {namespace}/{name} is not running")

    def lose_node(self, name: str, *, fail_pods: bool = True) -> None:
        """The node stops answering (see `Kubelet.lose_node` for `fail_pods`)."""
        self.kubelet.lose_node(name, fail_pods=fail_pods)

    def restore_node(self, name: str) -> None:
        self.kubelet.restore_node(name)

    def drop_watches(self) -> None:
        """Close every open watch; clients must resume from their last resourceVersion."""
        self.objects.store.drop_watches()

    def fail_watches(self) -> None:
        """End every open watch with an ERROR event, as kube-apiserver's etcd3 watcher does
        when etcd's watch fails for another reason than compaction (`transformErrorToEvent`:
        500 InternalError); clients resume from their last resourceVersion."""
        self.objects.store.fail_watches(internal("etcdserver: no leader"))

    def expire_history(self) -> None:
        """Forget the watch history: resuming from any earlier version answers 410 Gone."""
        self.objects.store.compact()

    def advance(self, seconds: float) -> None:
        """Jump simulated time forward (running `sleep`s and grace periods end sooner)."""
        self.objects.clock.advance(seconds)

    def set_api_faults(
        self,
        *,
        latency: float | None = None,
        error_rate: float | None = None,
        throttle_rate: float | None = None,
    ) -> None:
        for field, value in zip(_FAULT_FIELDS, (latency, error_rate, throttle_rate), strict=True):
            if value is not None:
                if value < 0:
                    raise bad_request(f"{field} must not be negative")
                setattr(self.faults, field, float(value))

    def state(self) -> dict[str, Any]:
        store = self.objects.store
        return {
            "resourceVersion": store.rv,
            "oldestWatchableVersion": store.compacted_rv,
            "simulatedSeconds": self.objects.clock.seconds(),
            "now": self.objects.clock.timestamp(),
            "counts": {r.plural: store.count(r) for r in registry.RESOURCES},
            "faults": {f: getattr(self.faults, f) for f in _FAULT_FIELDS},
            "apiCalls": dict(sorted(self.api_calls.items())),
            "apiRefusals": dict(sorted(self.api_refusals.items())),
        }

    # HTTP ---------------------------------------------------------------------------------

    def routes(self) -> list[web.RouteDef]:
        return [
            web.post("/sim/pods/{namespace}/{name}/evict", self._evict),
            web.post("/sim/pods/{namespace}/{name}/preempt", self._preempt),
            web.post("/sim/pods/{namespace}/{name}/node-pressure", self._pressure),
            web.post("/sim/pods/{namespace}/{name}/crash", self._crash),
            web.post("/sim/pods/{namespace}/{name}/oom", self._oom),
            web.post("/sim/nodes/{name}/lose", self._lose),
            web.post("/sim/nodes/{name}/restore", self._restore),
            web.post("/sim/watches/drop", self._drop),
            web.post("/sim/watches/expire", self._expire),
            web.post("/sim/watches/fail", self._fail),
            web.post("/sim/clock/advance", self._advance),
            web.get("/sim/faults", self._get_faults),
            web.put("/sim/faults", self._put_faults),
            web.get("/sim/state", self._state),
            web.get("/sim/pods/created", self._created),
        ]

    async def _evict(self, request: web.Request) -> web.Response:
        self.evict(request.match_info["namespace"], request.match_info["name"])
        return _ok()

    async def _preempt(self, request: web.Request) -> web.Response:
        info = request.match_info
        self.preempt(info["namespace"], info["name"], request.query.get("reason", "preempt"))
        return _ok()

    async def _pressure(self, request: web.Request) -> web.Response:
        info = request.match_info
        resource = request.query.get("resource", "memory")
        self.evict_for_pressure(info["namespace"], info["name"], resource)
        return _ok()

    async def _crash(self, request: web.Request) -> web.Response:
        info = request.match_info
        self.crash(info["namespace"], info["name"], int(request.query.get("exitCode", "1")))
        return _ok()

    async def _oom(self, request: web.Request) -> web.Response:
        info = request.match_info
        self.oom_kill(info["namespace"], info["name"], request.query.get("container", ""))
        return _ok()

    async def _lose(self, request: web.Request) -> web.Response:
        fail_pods = request.query.get("failPods", "true") != "false"
        self.lose_node(request.match_info["name"], fail_pods=fail_pods)
        return _ok()

    async def _restore(self, request: web.Request) -> web.Response:
        self.restore_node(request.match_info["name"])
        return _ok()

    async def _drop(self, request: web.Request) -> web.Response:
        self.drop_watches()
        return _ok()

    async def _fail(self, request: web.Request) -> web.Response:
        self.fail_watches()
        return _ok()

    async def _expire(self, request: web.Request) -> web.Response:
        self.expire_history()
        return _ok()

    async def _advance(self, request: web.Request) -> web.Response:
        body = await _json(request)
        self.advance(float(body.get("seconds", 0)))
        return _ok()

    async def _get_faults(self, request: web.Request) -> web.Response:
        return web.Response(body=encode(self.state()["faults"]), content_type="application/json")

    async def _put_faults(self, request: web.Request) -> web.Response:
        body = await _json(request)
        unknown = set(body) - set(_FAULT_FIELDS)
        if unknown:
            raise bad_request(f"unknown fault settings: {sorted(unknown)}")
        self.set_api_faults(**{k: float(v) for k, v in body.items()})
        return await self._get_faults(request)

    async def _state(self, request: web.Request) -> web.Response:
        return web.Response(body=encode(self.state()), content_type="application/json")

    async def _created(self, request: web.Request) -> web.Response:
        body = encode({"items": self.creations.records})
        return web.Response(body=body, content_type="application/json")


def _ok() -> web.Response:
    return web.Response(body=b'{"status":"ok"}', content_type="application/json")


async def _json(request: web.Request) -> dict[str, Any]:
    raw = await request.read()
    try:
        body = decode(raw) if raw else {}
    except msgspec.DecodeError as exc:
        raise bad_request(f"invalid JSON: {exc}") from exc
    if not isinstance(body, dict):
        raise ApiError(400, "BadRequest", "expected a JSON object")
    return body
