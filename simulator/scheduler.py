"""A gang-aware scheduler: pods of `default-scheduler` one by one, pods of `volcano`
all-or-nothing per PodGroup.

Pods naming another scheduler are left alone, as on a real cluster. Gangs follow
Volcano: a PodGroup is Pending until its `minResources` (or its `minMember` pods'
requests) fit the queue's `capability` and the cluster (then Inqueue); its pods are
bound only when at least `minMember` of them can be placed at once (then Running);
a gang of which some pods run but too few can be placed is Unknown, and one with no pod
placed any more (all deleted) is Pending again, to be admitted anew. Failures are
reported as an `Unschedulable` condition with the reason, and on pods as
`PodScheduled=False`, with the Events the real schedulers write: `Scheduled` and
`FailedScheduling` on pods, `Unschedulable` and `Scheduled` on PodGroups. Work is
driven by changes: new pods are tried once, and all waiting pods are retried only
when capacity may have appeared.
"""

from __future__ import annotations

import asyncio
from collections import Counter

from lavalog.simulator import quantity, registry
from lavalog.simulator.background import BackgroundLoop
from lavalog.simulator.errors import ApiError
from lavalog.simulator.objects import Objects
from lavalog.simulator.pods import bind, is_terminal, set_condition
from lavalog.simulator.quantity import Resources
from lavalog.simulator.recorder import EventRecorder
from lavalog.simulator.selectors import Selector
from lavalog.simulator.store import Change, Key, Obj, key_of

DEFAULT_SCHEDULER = "default-scheduler"
GANG_SCHEDULER = "volcano"
SCHEDULERS = frozenset({DEFAULT_SCHEDULER, GANG_SCHEDULER})
GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
_ALL = Selector()
#: minResources repeats requests under quota names (`requests.cpu`, `count/pods`)
_QUOTA_PREFIXES = ("count/", "requests.", "limits.")


def group_of(pod: Obj) -> str | None:
    meta = pod["metadata"]
    return (meta.get("annotations") or {}).get(GROUP_ANNOTATION) or (meta.get("labels") or {}).get(
        GROUP_ANNOTATION
    )


def _min_capacity(spec: Obj) -> Resources:
    """A PodGroup's minResources that nodes provide: without the names under which it
    repeats them for quotas (`requests.cpu`, `count/pods`), which no node has."""
    return {
        name: value
        for name, value in quantity.parse_map(spec.get("minResources")).items()
        if not name.startswith(_QUOTA_PREFIXES)
    }


def _unplaced(phase: str) -> str:
    """The phase of a gang none of whose members is placed: Volcano's `jobStatus` keeps
    Inqueue (the gang holds its admission) and makes anything else Pending, so a gang
    whose pods were all deleted must be admitted again before it is placed."""
    return phase if phase == "Inqueue" else "Pending"


class Scheduler(BackgroundLoop):
    """Binds pending pods to nodes; `start()` inside the loop, `stop()` to end."""

    task_name = "simulator-scheduler"

    def __init__(self, objects: Objects, *, batch_delay: float = 0.005) -> None:
        super().__init__()
        self.objects = objects
        self.batch_delay = batch_delay
        self._pending: dict[Key, None] = {}  # unbound pods of our schedulers, oldest first
        self._fresh: dict[Key, None] = {}  # pending pods not tried yet, oldest first
        self._retry_all = False
        self._placed: dict[Key, tuple[str, Resources, str]] = {}  # -> (node, requests, queue)
        self._usage: dict[str, Resources] = {}  # node -> requests of its live pods
        self._queue_usage: dict[str, Resources] = {}
        self._groups: dict[Key, set[Key]] = {}  # (namespace, podgroup) -> its pods
        self._dirty_groups: set[Key] = set()
        #: Pending PodGroups waiting for the enqueue step (their pods may not exist yet)
        self._waiting: dict[Key, None] = {}
        #: PodGroups admitted (Inqueue) and not running yet, and what they hold
        self._reserved = _Reservations()
        self._wake = asyncio.Event()
        self._events = {name: EventRecorder(objects, name) for name in SCHEDULERS}
        objects.store.subscribe(self._observe)

    def start(self) -> None:
        for entry in self.objects.store.scan(registry.POD, None, _ALL):
            self._track_pod(entry.obj, None, deleted=False)
        super().start()

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
            self._waiting.pop(gkey, None)
            if self._reserved.release(gkey):
                self._retry()
        elif resource is registry.PODGROUP:
            meta = change.entry.obj["metadata"]
            if change.entry.obj.get("status", {}).get("phase", "Pending") == "Pending":
                self._waiting.setdefault((meta["namespace"], meta["name"]), None)
                self._wake.set()
            old_gen = (change.old or {}).get("metadata", {}).get("generation")
            if old_gen != change.entry.obj["metadata"].get("generation"):
                meta = change.entry.obj["metadata"]
                self._dirty_groups.add((meta["namespace"], meta["name"]))
                self._retry()

    def _track_pod(self, pod: Obj, old: Obj | None, *, deleted: bool) -> None:
        key = key_of(pod)
        group = group_of(pod)
        if group is not None:
            gkey = (key[0], group)
            members = self._groups.setdefault(gkey, set())
            if deleted:
                members.discard(key)
                if not members:
                    del self._groups[gkey]
            else:
                members.add(key)
            if (
                deleted
                or old is None
                or old.get("status", {}).get("phase") != pod.get("status", {}).get("phase")
            ):
                self._dirty_groups.add(gkey)
                self._wake.set()
        gone = deleted or is_terminal(pod)
        if pod["spec"].get("nodeName") or gone or pod["metadata"].get("deletionTimestamp"):
            self._pending.pop(key, None)
            self._fresh.pop(key, None)
        elif pod["spec"].get("schedulerName") in SCHEDULERS and key not in self._pending:
            self._pending[key] = None
            self._fresh[key] = None
            self._wake.set()
        placed = self._placed.get(key)
        if placed is not None and (gone or pod["spec"].get("nodeName") != placed[0]):
            node, requests, queue = self._placed.pop(key)
            quantity.add(self._usage[node], requests, -1)
            quantity.add(self._queue_usage[queue], requests, -1)
            self._retry()
        if not gone and pod["spec"].get("nodeName") and key not in self._placed:
            node, requests = pod["spec"]["nodeName"], quantity.pod_requests(pod)
            queue = self._queue_of(key[0], group)
            self._placed[key] = (node, requests, queue)
            quantity.add(self._usage.setdefault(node, {}), requests)
            quantity.add(self._queue_usage.setdefault(queue, {}), requests)

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
        candidates = list(self._pending if self._retry_all else self._fresh)
        self._retry_all = False
        self._fresh.clear()
        free = self._free()
        seen: set[Key] = set()
        for key in candidates:
            if key not in self._pending:
                continue
            pod = self.objects.find(registry.POD, *key)
            if pod is None:
                continue
            group = group_of(pod)
            if pod["spec"].get("schedulerName") == GANG_SCHEDULER and group is not None:
                gkey = (key[0], group)
                if gkey not in seen:
                    seen.add(gkey)
                    self._schedule_gang(gkey, free)
            else:
                self._schedule_pod(pod, free)
        for gkey in list(self._dirty_groups):
            self._dirty_groups.discard(gkey)
            self._refresh_group(gkey)
        self._enqueue_waiting(free)

    def _enqueue_waiting(self, free: dict[str, Resources]) -> None:
        """Volcano's enqueue action: a Pending PodGroup becomes Inqueue when its
        minResources fit what is idle, less what admitted gangs that do not run yet hold.
        Its controller creates the pods only then, so a gang that cannot run takes nothing
        (two 4-GPU jobs on 4 GPUs: one is admitted, the other waits, none deadlocks)."""
        if not self._waiting:
            return
        idle, held_by_queue = self._unreserved(free)
        for gkey in list(self._waiting):
            pg = self.objects.find(registry.PODGROUP, *gkey)
            if pg is None or pg.get("status", {}).get("phase", "Pending") != "Pending":
                self._waiting.pop(gkey, None)
                continue
            if any(k in self._pending for k in self._groups.get(gkey, ())):
                continue  # pods exist: the gang step admits it with them
            spec = pg.get("spec", {})
            minimum = _min_capacity(spec)
            queue_name = str(spec.get("queue") or "default")
            queue = self.objects.find(registry.QUEUE, "", queue_name)
            capability = quantity.parse_map((queue or {}).get("spec", {}).get("capability"))
            used = dict(self._queue_usage.get(queue_name, {}))
            quantity.add(used, held_by_queue.get(queue_name, {}))
            problem = self._enqueue_problem(
                queue_name, queue, capability, used, minimum, {"cluster": idle}
            )
            if problem:
                conditions = pg.get("status", {}).get("conditions") or []
                if not any(c.get("message") == problem for c in conditions):
                    self._gang_status(gkey, "Pending", False, "NotEnoughResources", problem)
                continue
            self._waiting.pop(gkey, None)
            self._reserved.hold(gkey, queue_name, minimum)
            quantity.add(idle, minimum, -1)
            quantity.add(held_by_queue.setdefault(queue_name, {}), minimum)
            self._gang_status(gkey, "Inqueue", None, "", "")

    def _unreserved(
        self, free: dict[str, Resources], *, besides: Key | None = None
    ) -> tuple[Resources, dict[str, Resources]]:
        """What is idle once admitted gangs that do not run yet (other than `besides`)
        have what they hold, and what those gangs hold per queue."""
        idle = quantity.total(free.values())
        quantity.add(idle, self._reserved.total, -1)
        held_by_queue = {queue: dict(held) for queue, held in self._reserved.by_queue.items()}
        mine = self._reserved.held(besides) if besides is not None else None
        if mine is not None:
            queue, held = mine
            quantity.add(idle, held)
            quantity.add(held_by_queue[queue], held, -1)
        return idle, held_by_queue

    def _free(self) -> dict[str, Resources]:
        free: dict[str, Resources] = {}
        for entry in self.objects.store.scan(registry.NODE, None, _ALL):
            node = entry.obj
            ready = any(
                c["type"] == "Ready" and c["status"] == "True"
                for c in node.get("status", {}).get("conditions", [])
            )
            blocked = any(
                t.get("effect") in ("NoSchedule", "NoExecute")
                for t in node["spec"].get("taints") or ()
            )
            if not ready or blocked or node["spec"].get("unschedulable"):
                continue
            room = quantity.parse_map(node["status"].get("allocatable"))
            quantity.add(room, self._usage.get(node["metadata"]["name"], {}), -1)
            free[node["metadata"]["name"]] = room
        return free

    def _place(self, requests: Resources, free: dict[str, Resources]) -> str | None:
        """The fitting node with the most room left for what is asked (spreading, as the
        default scheduler's LeastAllocated score does); ties go to the first by name."""
        best, best_score = None, -1.0
        for name in sorted(free):
            room = free[name]
            if quantity.fits(requests, room):
                score = sum(room.get(r, 0.0) - v for r, v in requests.items() if r != "pods")
                if score > best_score:
                    best, best_score = name, score
        if best is not None:
            quantity.add(free[best], requests, -1)
        return best

    def _why(self, requests: Resources, free: dict[str, Resources]) -> str:
        nodes = self.objects.store.count(registry.NODE)
        reasons: Counter[str] = Counter()
        for room in free.values():
            for name in quantity.shortfall(requests, room):
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

    def _claim_problem(self, pod: Obj) -> str:
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

    def _nowhere(self, problem: str) -> str:
        return f"0/{self.objects.store.count(registry.NODE)} nodes are available: {problem}."

    def _schedule_pod(self, pod: Obj, free: dict[str, Resources]) -> None:
        problem = self._claim_problem(pod)
        if problem:
            self._mark_unschedulable(pod, self._nowhere(problem))
            return
        requests = quantity.pod_requests(pod)
        node = self._place(requests, free)
        if node is not None:
            self._bind(pod, node)
            return
        self._mark_unschedulable(pod, self._why(requests, free))

    def _bind(self, pod: Obj, node: str) -> None:
        ns, name = key_of(pod)
        bind(self.objects, ns, name, node)
        self._events[pod["spec"]["schedulerName"]].record(
            pod, "Normal", "Scheduled", f"Successfully assigned {ns}/{name} to {node}"
        )

    def _mark_unschedulable(self, pod: Obj, message: str) -> None:
        """PodScheduled=False and a FailedScheduling Event, when the reason is new."""
        conditions = pod.get("status", {}).get("conditions") or []
        if any(c.get("type") == "PodScheduled" and c.get("message") == message for c in conditions):
            return
        now = self.objects.clock.timestamp()

        def unschedulable(obj: Obj) -> None:
            set_condition(obj, "PodScheduled", False, now, reason="Unschedulable", message=message)

        self.objects.mutate(registry.POD, *key_of(pod), unschedulable)
        self._events[pod["spec"]["schedulerName"]].record(
            pod, "Warning", "FailedScheduling", message
        )

    def _schedule_gang(self, gkey: Key, free: dict[str, Resources]) -> None:
        ns, group = gkey
        pg = self.objects.find(registry.PODGROUP, ns, group)
        if pg is None:
            return  # as in Volcano, pods wait for their PodGroup
        spec, phase = pg.get("spec", {}), pg.get("status", {}).get("phase", "Pending")
        min_member = int(spec.get("minMember") or 1)
        members = sorted(k for k in self._groups.get(gkey, ()) if k in self._pending)
        alive = sum(1 for k in self._groups.get(gkey, ()) if k in self._placed)
        need = max(0, min_member - alive - self._succeeded(gkey))
        if len(members) < need:
            return  # the gang is not complete yet
        pods = [p for k in members if (p := self.objects.find(registry.POD, *k)) is not None]
        requests = [quantity.pod_requests(p) for p in pods]
        queue_name = str(spec.get("queue") or "default")
        queue = self.objects.find(registry.QUEUE, "", queue_name)
        capability = quantity.parse_map((queue or {}).get("spec", {}).get("capability"))
        used = dict(self._queue_usage.get(queue_name, {}))
        minimum = _min_capacity(spec) or quantity.total(requests[:need])
        if phase == "Pending" and need:
            # gangs admitted before this one keep what they reserved, pods or not
            idle, held_by_queue = self._unreserved(free, besides=gkey)
            admitted_use = dict(used)
            quantity.add(admitted_use, held_by_queue.get(queue_name, {}))
            problem = self._enqueue_problem(
                queue_name, queue, capability, admitted_use, minimum, {"cluster": idle}
            )
            if problem:
                self._gang_status(gkey, phase, False, "NotEnoughResources", problem)
                for pod in pods:
                    self._mark_unschedulable(pod, problem)
                return
            phase = "Inqueue"
            self._gang_status(gkey, phase, None, "", "")
        trial = {name: dict(room) for name, room in free.items()}
        placements: list[tuple[Obj, str]] = []
        left_out = requests[0]  # the first member that did not fit, for the message
        claim_problem = ""
        for pod, request in zip(pods, requests, strict=True):
            if not quantity.within(request, capability, used):
                continue
            problem = self._claim_problem(pod)
            if problem:
                claim_problem = claim_problem or problem
                continue
            node = self._place(request, trial)
            if node is not None:
                placements.append((pod, node))
                quantity.add(used, request)
            elif len(placements) < need:
                left_out = request
        if len(placements) < need:
            unplaced = need - len(placements)
            # why the rest cannot go where the gang's first members would
            why = self._nowhere(claim_problem) if claim_problem else self._why(left_out, trial)
            message = f"{unplaced}/{min_member} tasks in gang unschedulable: {why}"
            self._gang_status(
                gkey, "Unknown" if alive else _unplaced(phase), False, "NotEnoughResources", message
            )
            for pod in pods:
                self._mark_unschedulable(pod, why)
            return
        if not placements:
            return
        free.clear()
        free.update(trial)
        for pod, node in placements:
            self._bind(pod, node)
        self._dirty_groups.add(gkey)

    def _enqueue_problem(
        self,
        name: str,
        queue: Obj | None,
        capability: Resources,
        used: Resources,
        minimum: Resources,
        free: dict[str, Resources],
    ) -> str:
        if queue is None:
            return f'queue "{name}" does not exist'
        if queue.get("status", {}).get("state", "Open") != "Open":
            return f'queue "{name}" is {queue["status"]["state"]}'
        if not quantity.within(minimum, capability, used):
            lacking = ", ".join(
                n for n in capability if minimum.get(n, 0.0) + used.get(n, 0.0) > capability[n]
            )
            return f'queue "{name}" capability exceeded: {lacking}'
        idle = quantity.total(free.values())
        if not quantity.fits(minimum, idle):
            lacking = ", ".join(quantity.shortfall(minimum, idle))
            return f"cluster resources are not enough for minResources: {lacking}"
        return ""

    def _succeeded(self, gkey: Key) -> int:
        return sum(1 for _ in self._member_phases(gkey) if _ == "Succeeded")

    def _member_phases(self, gkey: Key) -> list[str]:
        phases = []
        for key in self._groups.get(gkey, ()):
            entry = self.objects.store.get(registry.POD, key)
            if entry is not None:
                phases.append(entry.obj.get("status", {}).get("phase", "Pending"))
        return phases

    def _refresh_group(self, gkey: Key) -> None:
        """Recompute a PodGroup's counts and phase from its pods."""
        pg = self.objects.find(registry.PODGROUP, *gkey)
        if pg is None:
            return
        counts = Counter(self._member_phases(gkey))
        alive = sum(1 for k in self._groups.get(gkey, ()) if k in self._placed)
        min_member = int(pg.get("spec", {}).get("minMember") or 1)
        phase = pg.get("status", {}).get("phase", "Pending")
        if alive or counts["Succeeded"]:
            self._reserved.release(gkey)  # its pods now hold what they use
        if alive + counts["Succeeded"] >= min_member and (alive or counts["Succeeded"]):
            phase, scheduled = "Running", True
        elif alive:
            phase, scheduled = "Unknown", None
        else:
            phase, scheduled = _unplaced(phase), None
        self._gang_status(gkey, phase, scheduled, "", "", counts=counts)

    def _gang_status(
        self,
        gkey: Key,
        phase: str,
        scheduled: bool | None,
        reason: str,
        message: str,
        *,
        counts: Counter[str] | None = None,
    ) -> None:
        now = self.objects.clock.timestamp()
        pg = self.objects.find(registry.PODGROUP, *gkey)
        if pg is None:
            return
        before = {c.get("type"): c for c in pg.get("status", {}).get("conditions") or ()}

        def update(obj: Obj) -> None:
            status = obj.setdefault("status", {})
            status["phase"] = phase
            if counts is not None:
                for field in ("running", "succeeded", "failed"):
                    status[field] = counts[field.capitalize()]
                    if not status[field]:
                        del status[field]
            if scheduled is True:
                set_condition(obj, "Unschedulable", False, now, reason="Scheduled", message="")
                set_condition(
                    obj, "Scheduled", True, now, reason="tasks in gang are ready to be scheduled"
                )
            elif scheduled is False:
                set_condition(obj, "Unschedulable", True, now, reason=reason, message=message)

        self.objects.mutate(registry.PODGROUP, *gkey, update)
        volcano = self._events[GANG_SCHEDULER]
        if scheduled is False and (before.get("Unschedulable") or {}).get("message") != message:
            volcano.record(pg, "Warning", "Unschedulable", message)
        elif scheduled is True and (before.get("Scheduled") or {}).get("status") != "True":
            volcano.record(pg, "Normal", "Scheduled", "pod group is ready")


class _Reservations:
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
        quantity.add(self.total, minimum)
        quantity.add(self.by_queue.setdefault(queue, {}), minimum)

    def held(self, gang: Key) -> tuple[str, Resources] | None:
        return self._gangs.get(gang)

    def release(self, gang: Key) -> bool:
        """Give up what `gang` holds; False when it held nothing."""
        found = self._gangs.pop(gang, None)
        if found is None:
            return False
        queue, minimum = found
        quantity.add(self.total, minimum, -1)
        quantity.add(self.by_queue[queue], minimum, -1)
        if not self._gangs:  # start again from exact zeros
            self.total, self.by_queue = {}, {}
        return True
