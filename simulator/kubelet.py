"""The kubelets of all simulated nodes: run bound pods and report their status.

A pod goes Pending (ContainerCreating) -> Running -> Succeeded/Failed with the
conditions, container states, exit codes, restart counts and timestamps a real kubelet
reports (`pod_status.py`); its containers' behaviour comes from `commands.py`, their
startup, readiness and liveness from their probes (`probes.py`). Deletion honours the
grace period (a container that does not finish in time is killed with exit code 137)
and then removes the pod, as the kubelet's final delete does. Losing a node stops its
pods and fails them with reason NodeLost, or (`fail_pods=False`) cuts its kubelet off
the API server while its pods run on; node pressure evicts a pod (Failed, reason
Evicted, DisruptionTarget). The kubelet's Events are written on the pod:
`Pulled`, `Created`, `Started` per container start, `BackOff` before a restart,
`Killing` when a deleted pod's containers are stopped or a probe failed, `Unhealthy`
for each failed probe.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field

from lavalog.simulator import commands, pod_status, registry, termination
from lavalog.simulator.disruption import DisruptionReason, disruption
from lavalog.simulator.errors import ApiError
from lavalog.simulator.objects import Objects
from lavalog.simulator.pods import TERMINAL, is_terminal, set_condition
from lavalog.simulator.probes import Probe, ProbeKind, Verdict, execute, probes_of
from lavalog.simulator.recorder import EventRecorder
from lavalog.simulator.selectors import Selector
from lavalog.simulator.store import Change, Obj, clone

LOG_LINES = 1000
KILLED = 137
MAX_BACKOFF = 300.0
#: the runtime's reason for a container the kernel's OOM killer ended
OOM_KILLED = "OOMKilled"
#: the runtime's reason for a container that exited, by whether its code was 0
_EXITED = {True: "Completed", False: "Error"}


#: a node's Ready condition, (reason, message) by reachability: posted by its kubelet,
#: or set by the node controller once the kubelet stops posting
_READY = {
    True: ("KubeletReady", "kubelet is posting ready status"),
    False: ("NodeStatusUnknown", "Kubelet stopped posting node status."),
}


def _set_reachable(node: Obj, now: str, *, reachable: bool) -> None:
    """A node's Ready condition and taints: Ready and untainted while its kubelet posts,
    Ready Unknown and tainted unreachable (its pods evicted) once it stops."""
    reason, message = _READY[reachable]
    set_condition(node, "Ready", reachable, now, reason=reason, message=message, heartbeat=True)
    if reachable:
        node["spec"].pop("taints", None)
    else:
        node["status"]["conditions"][-1]["status"] = "Unknown"
        node["spec"]["taints"] = [
            {"key": "node.kubernetes.io/unreachable", "effect": effect, "timeAdded": now}
            for effect in ("NoSchedule", "NoExecute")
        ]


class _Gone(Exception):
    """The pod this run belongs to no longer exists (or was replaced)."""


@dataclass(slots=True)
class _Node:
    name: str
    index: int
    alive: bool = True
    pod_ips: itertools.count[int] = field(default_factory=lambda: itertools.count(2))

    @property
    def ip(self) -> str:
        return f"10.0.{self.index // 250}.{self.index % 250 + 1}"


class Kubelet:
    """Runs every pod bound to one of its nodes; nodes are added with `add_node`."""

    def __init__(
        self, objects: Objects, *, default_run_seconds: float = 5.0, start_delay: float = 1.0
    ) -> None:
        self.objects = objects
        self.default_run_seconds = default_run_seconds
        self.start_delay = start_delay
        self._nodes: dict[str, _Node] = {}
        self._runs: dict[str, _PodRun] = {}
        #: per pod uid: (container, line), oldest first
        self._logs: dict[str, deque[tuple[str, str]]] = {}
        self._running = False
        self.events = EventRecorder(objects, "kubelet")
        self.node_controller = EventRecorder(objects, "node-controller")
        objects.store.subscribe(self._observe)

    # nodes ---------------------------------------------------------------------------

    def add_node(self, name: str, capacity: Mapping[str, str]) -> None:
        node = _Node(name, len(self._nodes))
        self._nodes[name] = node
        now = self.objects.clock.timestamp()
        self.objects.create(
            registry.NODE,
            "",
            {
                "metadata": {
                    "name": name,
                    "labels": {
                        "kubernetes.io/hostname": name,
                        "kubernetes.io/os": "linux",
                        "kubernetes.io/arch": "amd64",
                        "node.kubernetes.io/instance-type": "simulated",
                    },
                },
                "spec": {"podCIDR": f"10.244.{node.index}.0/24"},
            },
        )

        def status(obj: Obj) -> None:
            obj["status"] = {
                "capacity": dict(capacity),
                "allocatable": dict(capacity),
                "addresses": [
                    {"type": "InternalIP", "address": node.ip},
                    {"type": "Hostname", "address": name},
                ],
                "nodeInfo": {
                    "architecture": "amd64",
                    "bootID": node.ip,
                    "containerRuntimeVersion": "sim://1.0",
                    "kernelVersion": "6.1.0",
                    "kubeProxyVersion": "v1.30.0",
                    "kubeletVersion": "v1.30.0",
                    "machineID": name,
                    "operatingSystem": "linux",
                    "osImage": "lavalog simulated node",
                    "systemUUID": name,
                },
                "phase": "Running",
            }
            _set_reachable(obj, now, reachable=True)

        self.objects.mutate(registry.NODE, "", name, status)

    def crash(self, namespace: str, name: str, exit_code: int) -> bool:
        """Crash the running containers of a pod; False when the pod runs nowhere."""
        for run in self._runs.values():
            if (run.namespace, run.name) == (namespace, name):
                run.crash(exit_code)
                return True
        return False

    def oom_kill(self, namespace: str, name: str, container: str) -> bool:
        """The kernel's OOM killer ends one running container of a pod (what a container
        that outgrows its memory limit meets): exit code 137, reason OOMKilled. False
        when that container runs nowhere."""
        for run in self._runs.values():
            if (run.namespace, run.name) == (namespace, name):
                return run.oom_kill(container)
        return False

    def evict(self, namespace: str, name: str, resource: str) -> bool:
        """Evict a running pod as the eviction manager does when its node runs low on
        `resource`; False when the pod runs nowhere."""
        for run in self._runs.values():
            if (run.namespace, run.name) == (namespace, name):
                run.evict(f"The node was low on resource: {resource}. ")
                return True
        return False

    def lose_node(self, name: str, *, fail_pods: bool = True) -> None:
        """The node stops answering: it turns NotReady and is tainted unreachable.
        `fail_pods`: its pods fail at once with reason NodeLost (the simulator's
        shortcut for a node that died). Otherwise as Kubernetes sees a node it cannot
        reach: its pods keep running unreported, the node controller marks them not
        Ready, and the taint eviction controller deletes them once their toleration is
        over; its kubelet sees that deletion when the node is back."""
        node = self._set_alive(name, alive=False)
        runs = [r for r in self._runs.values() if r.node is node]
        for run in runs:
            if fail_pods:
                run.task.cancel()
                del self._runs[run.uid]
                with contextlib.suppress(_Gone):
                    run.lost()
            else:
                self._mark_not_ready(run)

    def restore_node(self, name: str) -> None:
        node = self._set_alive(name, alive=True)
        for run in [r for r in self._runs.values() if r.node is node]:
            with contextlib.suppress(_Gone, ApiError):
                run.resync()
            if run.task.done():
                self._finished(run)

    def _mark_not_ready(self, run: _PodRun) -> None:
        """The node lifecycle controller's `MarkPodsNotReady`: Ready False, and a
        Warning `NodeNotReady` Event."""
        pod = self.objects.find(registry.POD, run.namespace, run.name)
        if pod is None or is_terminal(pod):
            return
        now = self.objects.clock.timestamp()

        def not_ready(obj: Obj) -> None:
            for condition in obj.get("status", {}).get("conditions") or ():
                if condition.get("type") == "Ready" and condition.get("status") != "False":
                    condition.update(status="False", lastTransitionTime=now)

        self.objects.mutate(registry.POD, run.namespace, run.name, not_ready)
        self.node_controller.record(pod, "Warning", "NodeNotReady", "Node is not ready")

    def _set_alive(self, name: str, *, alive: bool) -> _Node:
        node = self._node(name)
        node.alive = alive
        now = self.objects.clock.timestamp()
        self.objects.mutate(
            registry.NODE, "", name, lambda obj: _set_reachable(obj, now, reachable=alive)
        )
        return node

    def _node(self, name: str) -> _Node:
        node = self._nodes.get(name)
        if node is None:
            raise ApiError(404, "NotFound", f'nodes "{name}" not found')
        return node

    # pods ------------------------------------------------------------------------------

    def logs(self, pod: Obj, container: str = "") -> str:
        """The pod's log (one container's, when named), as `kubectl logs` reads it."""
        return "".join(line + "\n" for line in self.log_lines(pod["metadata"]["uid"], container))

    def log_lines(self, uid: str, container: str = "") -> list[str]:
        lines = self._logs.get(uid, ())
        return [line for name, line in lines if not container or name == container]

    def start(self) -> None:
        self._running = True
        for entry in list(self.objects.store.scan(registry.POD, None, _ALL)):
            self._consider(entry.obj)

    async def stop(self) -> None:
        self._running = False
        runs = list(self._runs.values())
        self._runs.clear()
        for run in runs:
            run.task.cancel()
        await asyncio.gather(*(r.task for r in runs), return_exceptions=True)

    def _observe(self, change: Change) -> None:
        if change.resource is not registry.POD:
            return
        obj = change.entry.obj
        if change.type == "DELETED":
            run = self._runs.pop(obj["metadata"]["uid"], None)
            if run is not None:
                run.task.cancel()
            self._logs.pop(obj["metadata"]["uid"], None)
            return
        self._consider(obj)

    def _consider(self, pod: Obj) -> None:
        uid = pod["metadata"]["uid"]
        run = self._runs.get(uid)
        if run is None:
            node = self._nodes.get(pod["spec"].get("nodeName") or "")
            if not self._running or node is None or not node.alive or is_terminal(pod):
                return
            run = self._runs[uid] = _PodRun(self, node, pod)
        if pod["metadata"].get("deletionTimestamp") and run.node.alive:
            run.terminate(pod["metadata"].get("deletionGracePeriodSeconds") or 0)

    def _finished(self, run: _PodRun) -> None:
        if self._runs.get(run.uid) is run and run.node.alive:  # else reported once back
            del self._runs[run.uid]

    def _log(self, uid: str, container: str, line: str) -> None:
        self._logs.setdefault(uid, deque(maxlen=LOG_LINES)).append((container, line))


class _PodRun:
    """One pod's life on a node, as a task that writes the pod's status as it goes."""

    def __init__(self, kubelet: Kubelet, node: _Node, pod: Obj) -> None:
        self.kubelet = kubelet
        self.objects = kubelet.objects
        self.clock = kubelet.objects.clock
        self.node = node
        meta = pod["metadata"]
        self.namespace, self.name, self.uid = meta["namespace"], meta["name"], meta["uid"]
        self.spec: Obj = pod["spec"]
        self.status: Obj = clone(pod.get("status") or {})
        self._terminating = asyncio.Event()
        self._killed = asyncio.Event()
        #: exit code forced on the running containers by `crash`
        self._crash_code: int | None = None
        self._crashed = asyncio.Event()
        #: per running container: set when the OOM killer ends it (`oom_kill`)
        self._oom: dict[str, asyncio.Event] = {}
        self._killer: asyncio.Task[None] | None = None
        #: whether the pod's sandbox exists (PodReadyToStartContainers)
        self._sandbox = False
        #: per container: what the probes of its current incarnation say
        self._verdicts: dict[str, dict[ProbeKind, Verdict]] = {}
        #: why the kubelet evicted the pod, once it did
        self._evicted = ""
        self.task = asyncio.create_task(self._main(), name=f"kubelet {self.namespace}/{self.name}")

    def crash(self, exit_code: int) -> None:
        """Make the containers running now exit at once with `exit_code` (a crash, an OOM)."""
        self._crash_code = exit_code
        self._crashed.set()

    def oom_kill(self, container: str) -> bool:
        """The OOM killer ends `container` now; False when it is not running."""
        killed = self._oom.get(container)
        if killed is None:
            return False
        killed.set()
        return True

    def evict(self, message: str) -> None:
        """Node-pressure eviction (eviction manager `evictPod`, hard threshold): a
        Warning `Evicted` Event, the containers killed at once, the pod Failed with
        reason Evicted and `DisruptionTarget` (TerminationByKubelet). It is not deleted."""
        if self._evicted or self._terminating.is_set():
            return
        self._evicted = message
        self._event("Warning", "Evicted", message)
        self.terminate(0)

    def terminate(self, grace: int) -> None:
        if self._terminating.is_set():
            if grace == 0:
                self._killed.set()
            return
        self._terminating.set()
        for key, kind in (
            ("initContainerStatuses", "initContainers"),
            ("containerStatuses", "containers"),
        ):
            for status in self.status.get(key, []):
                if "running" in status.get("state", {}):
                    self._event(
                        "Normal",
                        "Killing",
                        f"Stopping container {status['name']}",
                        container=f"spec.{kind}{{{status['name']}}}",
                    )
        self._killer = asyncio.create_task(self._kill_after(grace))

    async def _kill_after(self, grace: float) -> None:
        await self.clock.sleep(grace)
        self._killed.set()

    async def _main(self) -> None:
        try:
            await self._start()
            if await self._run_init_containers():
                await asyncio.gather(
                    *(
                        self._run_container(c, "containerStatuses", init=False)
                        for c in self.spec.get("containers", [])
                    )
                )
            if self._terminating.is_set() and not self._evicted:
                self.objects.delete(
                    registry.POD,
                    self.namespace,
                    self.name,
                    grace_period=0,
                    preconditions={"uid": self.uid},
                )
        except (_Gone, ApiError):
            pass
        finally:
            if self._killer is not None:
                self._killer.cancel()
            self.kubelet._finished(self)

    # lifecycle steps ---------------------------------------------------------------------

    async def _start(self) -> None:
        status = self.status
        status.update(phase="Pending", hostIP=self.node.ip, startTime=self.clock.timestamp())
        status["podIP"] = f"10.244.{self.node.index}.{next(self.node.pod_ips) % 250 + 2}"
        status["podIPs"] = [{"ip": status["podIP"]}]
        inits = self.spec.get("initContainers", [])
        if inits:
            status["initContainerStatuses"] = [_waiting(c, "PodInitializing") for c in inits]
        waiting = "PodInitializing" if inits else "ContainerCreating"
        # sorted by name, as the kubelet sorts them (`kubetypes.SortedContainerStatuses`)
        status["containerStatuses"] = [
            _waiting(c, waiting)
            for c in sorted(self.spec.get("containers", []), key=lambda c: str(c["name"]))
        ]
        self._settle()
        await self._sleep(self.kubelet.start_delay)
        self._sandbox = True

    async def _run_init_containers(self) -> bool:
        for container in self.spec.get("initContainers", []):
            if not await self._run_container(container, "initContainerStatuses", init=True):
                return False
        return not self._terminating.is_set()

    async def _run_container(self, container: Obj, key: str, *, init: bool) -> bool:
        """Run one container until it is done for good; True if it exited 0."""
        policy = self.spec.get("restartPolicy", "Always")
        restarts = 0
        program = commands.parse(container.get("command"), container.get("args"))
        name = container["name"]
        where = f"spec.{'initContainers' if init else 'containers'}{{{name}}}"
        while True:
            self._event(
                "Normal",
                "Pulled",
                f'Container image "{container.get("image", "")}" already present on machine',
                container=where,
            )
            self._event("Normal", "Created", f"Created container {name}", container=where)
            self._event("Normal", "Started", f"Started container {name}", container=where)
            started = self.clock.timestamp()
            stop, probes = asyncio.Event(), [] if init else probes_of(container)
            self._verdicts[name] = {p.kind: Verdict(p) for p in probes}
            self._set(key, container, {"state": {"running": {"startedAt": started}}})
            up = asyncio.Event()  # the startup probe passed, or there is none
            if ProbeKind.STARTUP not in self._verdicts[name]:
                up.set()
            watchers = [
                asyncio.create_task(self._probe(name, where, p, stop=stop, up=up)) for p in probes
            ]
            files: dict[str, str] = {}
            try:
                code, reason = await self._execute(program, stop, name, files)
            finally:
                for watcher in watchers:
                    watcher.cancel()
            finished = self.clock.timestamp()
            terminated = {
                "exitCode": code,
                "reason": reason,
                "startedAt": started,
                "finishedAt": finished,
                "containerID": _container_id(self.uid, name, restarts),
            }
            message = self._termination_message(container, code, reason, files)
            if message:
                terminated["message"] = message
            again = not self._terminating.is_set() and (
                (policy == "Always" and not init) or (policy != "Never" and code != 0)
            )
            if not again:
                self._set(key, container, {"state": {"terminated": terminated}})
                return code == 0
            restarts += 1
            backoff = min(10.0 * 2 ** (restarts - 1), MAX_BACKOFF)
            pod = f"{self.name}_{self.namespace}({self.uid})"
            self._set(
                key,
                container,
                {
                    "state": {
                        "waiting": {
                            "reason": "CrashLoopBackOff",
                            "message": f"back-off {go_duration(backoff)} restarting failed "
                            f"container={name} pod={pod}",
                        }
                    },
                    "lastState": {"terminated": terminated},
                    "restartCount": restarts,
                },
            )
            self._event(
                "Warning",
                "BackOff",
                f"Back-off restarting failed container {name} in pod {pod}",
                container=where,
            )
            await self._sleep(backoff)
            if self._terminating.is_set():
                return code == 0

    async def _execute(
        self, program: commands.Program, stop: asyncio.Event, name: str, files: dict[str, str]
    ) -> tuple[int, str]:
        """Run a container's program until it exits, the pod is killed, it crashes
        (`crash`), the OOM killer ends it (`oom_kill`) or the kubelet stops it (`stop`: a
        failed liveness or startup probe); its exit code and the runtime's reason. What it
        writes to files is left in `files`."""
        uid = self.uid
        oom = self._oom[name] = asyncio.Event()
        run = asyncio.create_task(
            commands.run(
                program,
                sleep=self.clock.sleep,
                log=lambda line: self.kubelet._log(uid, name, line),
                default_seconds=self.kubelet.default_run_seconds,
                files=files,
            )
        )
        others = [asyncio.create_task(e.wait()) for e in (self._killed, self._crashed, stop, oom)]
        try:
            await asyncio.wait({run, *others}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiter in others:
                waiter.cancel()
            if not run.done():
                run.cancel()
            del self._oom[name]
        # a fault that came while the status still said running wins over an exit seen in
        # the same turn: the container was running when it was hit, whichever task the
        # event loop happened to wake first
        if oom.is_set() and not self._killed.is_set():
            return KILLED, OOM_KILLED
        if self._crash_code is not None and not self._killed.is_set() and not stop.is_set():
            code, self._crash_code = self._crash_code, None
            self._crashed.clear()
            return code, _EXITED[code == 0]
        if run.done() and not run.cancelled():
            code = run.result()
            return code, _EXITED[code == 0]
        return KILLED, _EXITED[False]

    def _termination_message(
        self, container: Obj, code: int, reason: str, files: dict[str, str]
    ) -> str:
        """Its termination message (`termination`), cut to its share of the pod's."""
        message = termination.termination_message(
            container,
            exit_code=code,
            reason=reason,
            files=files,
            log=self.kubelet.log_lines(self.uid, container["name"]),
        )
        every = len(self.spec.get("containers", [])) + len(self.spec.get("initContainers", []))
        return termination.pod_share(message, every)

    async def _probe(
        self, name: str, where: str, probe: Probe, *, stop: asyncio.Event, up: asyncio.Event
    ) -> None:
        """One probe worker of one container incarnation (`worker.run`, `doProbe`):
        readiness and liveness probes wait for the container to have started; a failed
        liveness or startup verdict stops the container."""
        verdict = self._verdicts[name][probe.kind]
        await self.clock.sleep(probe.initial_delay)
        if probe.kind is not ProbeKind.STARTUP:
            await up.wait()
        try:
            while probe.kind is ProbeKind.READINESS or not self._terminating.is_set():
                ok, output = await execute(probe, self.clock)
                if not ok:
                    message = f"{probe.kind} probe failed: {output}"
                    self._event("Warning", "Unhealthy", message, container=where)
                if verdict.record(ok):
                    self._settle()
                    if probe.kind is ProbeKind.STARTUP and ok:
                        up.set()
                        return
                    if probe.kind is not ProbeKind.READINESS and not ok:
                        await self._stop_failed(name, where, probe.kind, stop)
                        return
                await self.clock.sleep(probe.period)
        except (_Gone, ApiError):
            return

    async def _stop_failed(
        self, name: str, where: str, kind: ProbeKind, stop: asyncio.Event
    ) -> None:
        """Kill a container that failed its liveness or startup probe, as the kubelet
        does (`computePodActions`): Killing, then, the program ignoring SIGTERM, exit
        code 137 once the grace period is over."""
        restart = self.spec.get("restartPolicy", "Always") != "Never"
        message = f"Container {name} failed {kind.lower()} probe"
        if restart:
            message += ", will be restarted"
        self._event("Normal", "Killing", message, container=where)
        await self.clock.sleep(float(self.spec.get("terminationGracePeriodSeconds", 30)))
        stop.set()

    async def _sleep(self, seconds: float) -> None:
        """Sleep simulated time, cut short when the pod is being deleted."""
        sleeping = asyncio.create_task(self.clock.sleep(seconds))
        stopping = asyncio.create_task(self._terminating.wait())
        try:
            await asyncio.wait({sleeping, stopping}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            sleeping.cancel()
            stopping.cancel()

    def _event(self, type_: str, reason: str, message: str, *, container: str = "") -> None:
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"namespace": self.namespace, "name": self.name, "uid": self.uid},
        }
        self.kubelet.events.record(
            pod, type_, reason, message, field_path=container, host=self.node.name
        )

    # status --------------------------------------------------------------------------

    def _set(self, key: str, container: Obj, fields: Obj) -> None:
        for status in self.status.get(key, []):
            if status["name"] == container["name"]:
                if (
                    "lastState" not in fields
                    and "terminated" in status.get("state", {})
                    and "running" in fields["state"]
                ):
                    status["lastState"] = {"terminated": status["state"]["terminated"]}
                status.update(fields)
                status["containerID"] = _container_id(
                    self.uid, container["name"], status.get("restartCount", 0)
                )
        self._settle()

    def _settle(self) -> None:
        """Derive readiness, phase and conditions from the container states and probe
        verdicts, as the kubelet's status generation does, then write."""
        self._readiness()
        status = self.status
        if status.get("phase") not in TERMINAL:
            status["phase"] = pod_status.phase(
                self.spec, status, terminal=self._terminating.is_set()
            )
        stored = self.objects.find(registry.POD, self.namespace, self.name) or {}
        others = pod_status.others_of(stored.get("status", {}).get("conditions"))
        sandbox = self._sandbox and status["phase"] not in TERMINAL
        own = pod_status.kubelet_conditions(self.spec, status, others, sandbox=sandbox)
        if self._evicted and status["phase"] in TERMINAL:
            status.update(phase="Failed", reason="Evicted", message=self._evicted)
            own.append(disruption(DisruptionReason.TERMINATION_BY_KUBELET, self._evicted))
        status["conditions"] = pod_status.with_transition_times(
            own, status.get("conditions"), self.clock.timestamp()
        )
        self._write()

    def _readiness(self) -> None:
        """`started` and `ready` of each container (`prober_manager.UpdatePodStatus`): an
        init container is ready once it exited 0; a container has started once running
        and past its startup probe, and is ready once started and past its readiness
        probe (without one, as soon as it runs)."""
        for status in self.status.get("initContainerStatuses", []):
            state = pod_status.state_of(status)
            status["started"] = state == "running"
            status["ready"] = (
                state == "terminated" and status["state"]["terminated"]["exitCode"] == 0
            )
        for status in self.status.get("containerStatuses", []):
            verdicts = self._verdicts.get(status["name"], {})
            running = pod_status.state_of(status) == "running"
            startup, readiness = verdicts.get(ProbeKind.STARTUP), verdicts.get(ProbeKind.READINESS)
            status["started"] = running and (startup is None or startup.result is True)
            status["ready"] = status["started"] and (readiness is None or readiness.result is True)

    def resync(self) -> None:
        """Its node is back: report the pod as it is now, and stop it if it was deleted
        meanwhile."""
        self._settle()
        pod = self.objects.find(registry.POD, self.namespace, self.name) or {}
        if pod.get("metadata", {}).get("deletionTimestamp"):
            self.terminate(pod["metadata"].get("deletionGracePeriodSeconds") or 0)

    def _write(self) -> None:
        if self.node.alive:  # else its kubelet cannot reach the API server
            self._store()

    def _store(self) -> None:
        pod = self.objects.find(registry.POD, self.namespace, self.name)
        if pod is None or pod["metadata"]["uid"] != self.uid:
            raise _Gone
        status = clone(self.status)

        def replace(stored: Obj) -> Obj:
            conditions = stored.get("status", {}).get("conditions")
            status["conditions"] = pod_status.merge_conditions(conditions, status["conditions"])
            return {**stored, "status": status}

        # the status subresource, as the kubelet's status manager patches pods/status
        self.objects.rewrite(registry.POD, self.namespace, self.name, replace, subresource="status")

    def lost(self) -> None:
        now = self.clock.timestamp()
        self.status.update(
            phase="Failed",
            reason="NodeLost",
            message=f"Node {self.node.name} which was running pod {self.name} is unresponsive",
        )
        for kind in ("Ready", "ContainersReady"):
            set_condition(_holder(self.status), kind, False, now, reason="NodeLost")
        self._store()


def _holder(status: Obj) -> Obj:
    """Wrap a bare status so `set_condition` (which works on objects) can edit it."""
    return {"status": status}


def _waiting(container: Obj, reason: str) -> Obj:
    return {
        "name": container["name"],
        "image": container.get("image", ""),
        "imageID": "",
        "ready": False,
        "restartCount": 0,
        "started": False,
        "state": {"waiting": {"reason": reason}},
    }


def _container_id(uid: str, name: str, restarts: int) -> str:
    return f"sim://{uid[:8]}-{name}-{restarts}"


def go_duration(seconds: float) -> str:
    """A whole number of seconds as Go prints a `time.Duration`: 10s, 1m20s, 5m0s."""
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    if hours:
        return f"{hours}h{minutes}m{secs}s"
    return f"{minutes}m{secs}s" if minutes else f"{secs}s"


_ALL = Selector()
