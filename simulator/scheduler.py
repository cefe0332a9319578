"""The cluster's schedulers: kube-scheduler for `default-scheduler` pods, binding them
one by one, and vc-scheduler for `volcano` pods, gang by gang (`vc_scheduler.py`).

Pods naming another scheduler are left alone, as on a real cluster. Both share one
account of what every node's bound pods request. kube-scheduler binds a pending pod as
soon as it sees it, to the fitting node with the most room, or marks it
`PodScheduled=False` with a `FailedScheduling` Event. vc-scheduler works in sessions,
at most one per `schedule_period` of simulated time (its `--schedule-period`, 1 s), over
the gangs that changed since the last one: all waiting pods are retried only when
capacity may have appeared.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from collections.abc import Iterable

from lavalog.simulator import registry, vectors
from lavalog.simulator.background import BackgroundLoop
from lavalog.simulator.errors import ApiError
from lavalog.simulator.gang import PodReason
from lavalog.simulator.objects import Objects
from lavalog.simulator.pods import bind, is_terminal, own_conditions, set_condition
from lavalog.simulator.recorder import EventRecorder
from lavalog.simulator.rooms import Rooms
from lavalog.simulator.selectors import Selector
from lavalog.simulator.store import Change, Key, Obj, key_of
from lavalog.simulator.vc_scheduler import SCHEDULER_NAME, VolcanoSession
from lavalog.simulator.vectors import Resources

DEFAULT_SCHEDULER = "default-scheduler"
GANG_SCHEDULER = SCHEDULER_NAME
SCHEDULERS = frozenset({DEFAULT_SCHEDULER, GANG_SCHEDULER})
GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
_ALL = Selector()


def _schedulable(node: Obj) -> Resources | None:
    """The node's allocatable if new pods may go there: Ready, without NoSchedule or
    NoExecute taints, not cordoned."""
    ready = any(
        c["type"] == "Ready" and c["status"] == "True"
        for c in node.get("status", {}).get("conditions", [])
    )
    blocked = any(
        t.get("effect") in ("NoSchedule", "NoExecute") for t in node["spec"].get("taints") or ()
    )
    if not ready or blocked or node["spec"].get("unschedulable"):
        return None
    return vectors.parse_map(node["status"].get("allocatable"))


def group_of(pod: Obj) -> str | None:
    meta = pod["metadata"]
    return (meta.get("annotations") or {}).get(GROUP_ANNOTATION) or (meta.get("labels") or {}).get(
        GROUP_ANNOTATION
    )


class Scheduler(BackgroundLoop):
    """Binds pending pods to nodes; `start()` inside the loop, `stop()` to end."""

    task_name = "simulator-scheduler"

    def __init__(
        self, objects: Objects, *, batch_delay: float = 0.005, schedule_period: float = 1.0
    ) -> None:
        super().__init__()
        self.objects = objects
        self.batch_delay = batch_delay
        #: simulated seconds between two vc-scheduler sessions
        self.schedule_period = schedule_period
        self.pending: dict[Key, None] = {}  # unbound pods of our schedulers, oldest first
        self._fresh: dict[Key, None] = {}  # pending pods not tried yet, oldest first
        self._retry_all = False
        self.placed: dict[Key, tuple[str, Resources, str]] = {}  # -> (node, requests, queue)
        self._usage: dict[str, Resources] = {}  # node -> requests of its live pods
        #: node -> the stored object last read and its allocatable if schedulable: a cycle
        #: reads every node, and nodes change seldom
        self._nodes: dict[str, tuple[Obj, Resources | None]] = {}
        self.queue_usage: dict[str, Resources] = {}
        self.groups: dict[Key, set[Key]] = {}  # (namespace, podgroup) -> its pods
        #: gangs for the next vc-scheduler session; all waiting ones when `_session_all`
        self._session_gangs: set[Key] = set()
        self._session_all = False
        #: simulated time the last vc-scheduler session began
        self.last_session = -schedule_period
        self._session_timer: asyncio.Task[None] | None = None
        #: Pending PodGroups waiting for the enqueue action (their pods may not exist yet)
        self.waiting: dict[Key, None] = {}
        #: PodGroups admitted (Inqueue) and not running yet, and what they hold
        self.reserved = Reservations()
        #: per PodGroup, the last message of each vc-scheduler Event written on it
        self.said: dict[Key, dict[str, str]] = {}
        self._wake = asyncio.Event()
        self.events = {name: EventRecorder(objects, name) for name in SCHEDULERS}
        objects.store.subscribe(self._observe)

    def start(self) -> None:
        for entry in self.objects.store.scan(registry.POD, None, _ALL):
            self._track_pod(entry.obj, None, deleted=False)
        super().start()

    async def stop(self) -> None:
        if self._session_timer is not None:
            self._session_timer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._session_timer
        await super().stop()

    # bookkeeping from store changes ----------------------------------------------------

    def _observe(self, change: Change) -> None:
        resource = change.resource
        if resource is registry.POD:
            self._track_pod(change.entry.obj, change.old, deleted=change.type == "DELETED")
        elif resource is registry.NODE or resource is registry.QUEUE or resource is registry.PVC:
            self._retry()
        elif resource is registry.PODGROUP and change.type == "DELETED":
            meta = change.entry.obj["metadata"]
            gkey = (meta["namespace"], meta["name"])
            self.waiting.pop(gkey, None)
            self.said.pop(gkey, None)
            self._session_gangs.discard(gkey)
            if self.reserved.release(gkey):
                self._retry()
        elif resource is registry.PODGROUP:
            meta = change.entry.obj["metadata"]
            gkey = (meta["namespace"], meta["name"])
            if change.entry.obj.get("status", {}).get("phase", "Pending") == "Pending":
                self.waiting.setdefault(gkey, None)
                self._gang_changed(gkey)
            old_gen = (change.old or {}).get("metadata", {}).get("generation")
            if old_gen != meta.get("generation"):  # new, or its spec changed
                self._gang_changed(gkey)

    def _track_pod(self, pod: Obj, old: Obj | None, *, deleted: bool) -> None:
        key = key_of(pod)
        group = group_of(pod)
        if group is not None:
            gkey = (key[0], group)
            members = self.groups.setdefault(gkey, set())
            if deleted:
                members.discard(key)
                if not members:
                    del self.groups[gkey]
            else:
                members.add(key)
            if (
                deleted
                or old is None
                or old.get("status", {}).get("phase") != pod.get("status", {}).get("phase")
                or bool(old["metadata"].get("deletionTimestamp"))
                != bool(pod["metadata"].get("deletionTimestamp"))
            ):
                self._gang_changed(gkey)
        gone = deleted or is_terminal(pod)
        if pod["spec"].get("nodeName") or gone or pod["metadata"].get("deletionTimestamp"):
            self.pending.pop(key, None)
            self._fresh.pop(key, None)
        elif pod["spec"].get("schedulerName") in SCHEDULERS and key not in self.pending:
            self.pending[key] = None
            self._fresh[key] = None
            self._wake.set()
        placed = self.placed.get(key)
        if placed is not None and (gone or pod["spec"].get("nodeName") != placed[0]):
            node, requests, queue = self.placed.pop(key)
            vectors.add(self._usage[node], requests, -1)
            vectors.add(self.queue_usage[queue], requests, -1)
            self._retry()
        if not gone and pod["spec"].get("nodeName") and key not in self.placed:
            node, requests = pod["spec"]["nodeName"], vectors.pod_requests(pod)
            queue = self._queue_of(key[0], group)
            self.placed[key] = (node, requests, queue)
            vectors.add(self._usage.setdefault(node, {}), requests)
            vectors.add(self.queue_usage.setdefault(queue, {}), requests)

    def _gang_changed(self, gkey: Key) -> None:
        self._session_gangs.add(gkey)
        self._wake.set()

    def _retry(self) -> None:
        self._retry_all = True
        self._wake.set()

    def _queue_of(self, namespace: str, group: str | None) -> str:
        pg = self.objects.find(registry.PODGROUP, namespace, group) if group else None
        return str((pg or {}).get("spec", {}).get("queue") or "default")

    # the scheduling cycle -----------------------------------------------------------------

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            await asyncio.sleep(self.batch_delay)
            self._wake.clear()
            try:
                self._cycle()
            except ApiError:
                self._wake.set()  # something moved under us; look again

    def _cycle(self) -> None:
        retry_all = self._retry_all
        candidates = list(self.pending if retry_all else self._fresh)
        self._retry_all = False
        self._fresh.clear()
        self._session_all = self._session_all or retry_all
        free = self.free()
        for key in candidates:
            pod = self.objects.find(registry.POD, *key) if key in self.pending else None
            if pod is None:
                continue
            group = group_of(pod)
            if pod["spec"].get("schedulerName") == GANG_SCHEDULER and group is not None:
                self._session_gangs.add((key[0], group))
            else:
                self._schedule_pod(pod, free)
        if self._session_gangs or self._session_all:
            self._session(free)

    def _session(self, free: Rooms) -> None:
        """Run a vc-scheduler session now if one is due, else wake up when it is."""
        due = self.last_session + self.schedule_period
        if due > self.objects.clock.seconds():
            if self._session_timer is None or self._session_timer.done():
                self._session_timer = asyncio.create_task(self._wake_at(due))
            return
        gangs = set(self._session_gangs)
        if self._session_all:
            gangs |= set(self.waiting)
            gangs |= {
                g for g, members in self.groups.items() if not members.isdisjoint(self.pending)
            }
        self._session_gangs.clear()
        self._session_all = False
        self.last_session = self.objects.clock.seconds()
        try:
            VolcanoSession(self, free).run(gangs)
        except ApiError:
            self._session_all = True  # look at every gang again next time
            raise

    async def _wake_at(self, due: float) -> None:
        """Wake the cycle at simulated time `due`, fixed when the session was found not due
        (the clock may jump before this task first runs)."""
        await self.objects.clock.sleep_until(due)
        self._wake.set()

    # nodes and placement ----------------------------------------------------------------

    def free(self) -> Rooms:
        """What each schedulable node (Ready, without NoSchedule / NoExecute taints, not
        cordoned) has left for new pods, by node name in name order."""
        free = Rooms()
        for entry in self.objects.store.scan(registry.NODE, None, _ALL):
            node = entry.obj
            name = node["metadata"]["name"]
            read = self._nodes.get(name)
            if read is None or read[0] is not node:  # a stored object is replaced, not changed
                read = self._nodes[name] = (node, _schedulable(node))
            if read[1] is not None:
                room = dict(read[1])
                vectors.add(room, self._usage.get(name, {}), -1)
                free[name] = room
        return free

    def allocatable(self, nodes: Iterable[str]) -> Resources:
        """What the given nodes provide in all."""
        return vectors.total(
            vectors.parse_map(
                (self.objects.find(registry.NODE, "", n) or {}).get("status", {}).get("allocatable")
            )
            for n in nodes
        )

    def place(self, requests: Resources, free: Rooms) -> str | None:
        """The fitting node with the most room left for what is asked (spreading, as the
        default scheduler's LeastAllocated score does); ties go to the first by name.
        Takes the request out of that node's room."""
        best = free.best(requests)
        if best is not None:
            left = dict(free[best])  # a new vector: `Rooms` never changes one in place
            vectors.add(left, requests, -1)
            free[best] = left
        return best

    def _why(self, requests: Resources, free: dict[str, Resources]) -> str:
        nodes = self.objects.store.count(registry.NODE)
        reasons: Counter[str] = Counter()
        for room in free.values():
            for name in vectors.shortfall(requests, room):
                reasons[f"Insufficient {name}"] += 1
        down = nodes - len(free)
        if down:
            reasons["node(s) were unavailable or had untolerated taints"] = down
        detail = ", ".join(f"{n} {r}" for r, n in sorted(reasons.items()))
        return (
            f"0/{nodes} nodes are available: {detail}."
            if detail
            else f"0/{nodes} nodes are available."
        )

    def claim_problem(self, pod: Obj) -> str:
        """kube-scheduler's VolumeBinding verdict: a pod waits for the claims it mounts."""
        namespace = pod["metadata"]["namespace"]
        for volume in pod["spec"].get("volumes") or ():
            claim = (volume.get("persistentVolumeClaim") or {}).get("claimName")
            if not claim:
                continue
            found = self.objects.find(registry.PVC, namespace, claim)
            if found is None:
                return f'persistentvolumeclaim "{claim}" not found'
            if found.get("status", {}).get("phase") != "Bound":
                return "pod has unbound immediate PersistentVolumeClaims"
        return ""

    def _schedule_pod(self, pod: Obj, free: Rooms) -> None:
        problem = self.claim_problem(pod)
        if problem:
            nodes = self.objects.store.count(registry.NODE)
            self.mark_unschedulable(pod, f"0/{nodes} nodes are available: {problem}.")
            return
        requests = vectors.pod_requests(pod)
        node = self.place(requests, free)
        if node is not None:
            self.bind(pod, node)
            return
        self.mark_unschedulable(pod, self._why(requests, free))

    def bind(self, pod: Obj, node: str) -> None:
        ns, name = key_of(pod)
        bind(self.objects, ns, name, node)
        self.events[pod["spec"]["schedulerName"]].record(
            pod, "Normal", "Scheduled", f"Successfully assigned {ns}/{name} to {node}"
        )

    def mark_unschedulable(
        self, pod: Obj, message: str, reason: PodReason = PodReason.UNSCHEDULABLE
    ) -> None:
        """PodScheduled=False and a FailedScheduling Event, when the reason or message
        is new (vc-scheduler's `taskUnschedulable`, kube-scheduler's failure handler)."""
        conditions = pod.get("status", {}).get("conditions") or []
        if any(
            c.get("type") == "PodScheduled"
            and c.get("status") == "False"
            and (c.get("reason"), c.get("message")) == (reason, message)
            for c in conditions
        ):
            return
        now = self.objects.clock.timestamp()

        def unschedulable(stored: Obj) -> Obj:
            new = own_conditions({**stored})
            set_condition(new, "PodScheduled", False, now, reason=reason, message=message)
            return new

        self.objects.rewrite(registry.POD, *key_of(pod), unschedulable, subresource="status")
        self.events[pod["spec"]["schedulerName"]].record(
            pod, "Warning", "FailedScheduling", message
        )


class Reservations:
    """What admitted gangs without running pods hold, per gang, per queue and in all:
    kept as running sums, since every scheduling cycle asks for them and thousands of
    gangs may be admitted at once (10,000 one-pod Jobs: a sum per cycle made the
    scheduler the cluster's bottleneck)."""

    def __init__(self) -> None:
        self._gangs: dict[Key, tuple[str, Resources]] = {}  # -> (queue, minResources)
        self.total: Resources = {}
        self.by_queue: dict[str, Resources] = {}

    def hold(self, gang: Key, queue: str, minimum: Resources) -> None:
        self.release(gang)
        self._gangs[gang] = (queue, minimum)
        vectors.add(self.total, minimum)
        vectors.add(self.by_queue.setdefault(queue, {}), minimum)

    def release(self, gang: Key) -> bool:
        """Give up what `gang` holds; False when it held nothing."""
        found = self._gangs.pop(gang, None)
        if found is None:
            return False
        queue, minimum = found
        vectors.add(self.total, minimum, -1)
        vectors.add(self.by_queue[queue], minimum, -1)
        if not self._gangs:  # start again from exact zeros
            self.total, self.by_queue = {}, {}
        return True
