"""ResourceQuota: the API server's quota admission and the quota controller.

What an object costs is measured as Kubernetes' quota evaluators measure it
(pkg/quota/v1/evaluator/core): a pod `pods` 1 and `count/pods` 1, `requests.cpu` /
`cpu`, `requests.memory` / `memory`, `limits.*`, `ephemeral-storage` and hugepages,
`requests.<extended resource>` (`requests.nvidia.com/gpu`), from the sum of its
containers' requests and limits, the largest init container where larger, plus
`spec.overhead`; a pod that has finished (Succeeded, Failed) or outlived its deletion
grace period costs only `count/pods`. A PersistentVolumeClaim costs
`persistentvolumeclaims`, `requests.storage` and their per-storage-class forms, a
Service `services` (`services.loadbalancers`, `services.nodeports`), and any object of
any kind its `count/<resource>[.<group>]` (configmaps and secrets also under their
legacy names).

`QuotaAdmission` checks every create against every quota of the namespace, as the
ResourceQuota admission plugin does (staging/.../admission/plugin/resourcequota
`CheckRequest`): it reads each quota's `status` (so a quota the controller has not
counted yet does not apply, and a raised `spec.hard` applies once the controller has
synced it), refuses with 403 Forbidden and Kubernetes' messages, and charges an admitted
object to `status.used` at once. `QuotaController` keeps `status.hard` and
`status.used` as the resource quota controller does: recounted from the namespace's
objects when a quota's `spec.hard` changes, when a counted object is deleted or a pod
finishes (replenishment), and every five simulated minutes (its resync).
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from fractions import Fraction

from lavalog.apimachinery import resources
from lavalog.apimachinery.quantity import Quantity
from lavalog.apimachinery.resources import ONE, is_extended
from lavalog.simulator import registry
from lavalog.simulator.background import WorkQueue
from lavalog.simulator.errors import ApiError
from lavalog.simulator.objects import Objects
from lavalog.simulator.registry import ResourceType
from lavalog.simulator.selectors import Selector
from lavalog.simulator.store import Change, Key, Obj

Usage = dict[str, Quantity]

#: the quota controller's full resync (`--resource-quota-sync-period`)
RESYNC_SECONDS = 300.0
#: compute resources a pod is charged for, besides extended and hugepages ones
_POD_RESOURCES = frozenset(
    {
        "count/pods",
        "pods",
        "cpu",
        "memory",
        "ephemeral-storage",
        "requests.cpu",
        "requests.memory",
        "requests.ephemeral-storage",
        "limits.cpu",
        "limits.memory",
        "limits.ephemeral-storage",
    }
)
#: quota'd resources a pod's containers must each set ("it was a mistake" in pods.go)
_MUST_SPECIFY = frozenset(
    {"cpu", "memory", "requests.cpu", "requests.memory", "limits.cpu", "limits.memory"}
)
_HUGEPAGES = ("hugepages-", "requests.hugepages-")
_CLAIM_RESOURCES = ("persistentvolumeclaims", "requests.storage")
_SERVICE_RESOURCES = frozenset({"services", "services.loadbalancers", "services.nodeports"})
_STORAGE_CLASS = ".storageclass.storage.k8s.io/"
#: count resources with a name of their own from before `count/` existed
_LEGACY_COUNTS = {
    "configmaps": "configmaps",
    "secrets": "secrets",
    "resourcequotas": "resourcequotas",
    "replicationcontrollers": "replicationcontrollers",
}
_ALL = Selector()


def count_name(resource: ResourceType) -> str:
    """`ObjectCountQuotaResourceNameFor`: count/pods, count/jobs.batch.volcano.sh."""
    group = f".{resource.group}" if resource.group else ""
    return f"count/{resource.plural}{group}"


# what an object costs -----------------------------------------------------------------


def counts_compute(pod: Obj, now: datetime) -> bool:
    """`QuotaV1Pod`: a pod costs compute until it finished, or until its deletion grace
    period is over (a pod stuck terminating on a lost node costs nothing)."""
    if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
        return False
    meta = pod["metadata"]
    deleted, grace = meta.get("deletionTimestamp"), meta.get("deletionGracePeriodSeconds")
    if deleted and grace is not None:
        when = datetime.fromisoformat(deleted.replace("Z", "+00:00"))
        return not now > when + timedelta(seconds=grace)
    return True


def pod_usage(pod: Obj, now: datetime) -> Usage:
    """`PodUsageFunc`."""
    usage: Usage = {"count/pods": ONE}
    if not counts_compute(pod, now):
        return usage
    spec = pod.get("spec") or {}
    requests, limits = resources.pod_requests(spec), resources.pod_limits(spec)
    return resources.add(usage, resources.compute_usage(requests, limits))


def _claim_usage(claim: Obj) -> Usage:
    """The PersistentVolumeClaim evaluator's `Usage` (a request rounded up to a byte)."""
    usage: Usage = {"persistentvolumeclaims": ONE, "count/persistentvolumeclaims": ONE}
    spec = claim.get("spec") or {}
    klass = spec.get("storageClassName") or ""
    if klass:
        usage[f"{klass}{_STORAGE_CLASS}persistentvolumeclaims"] = ONE
    storage = ((spec.get("resources") or {}).get("requests") or {}).get("storage")
    if storage is not None:
        quantity = Quantity.parse(storage)
        quantity = Quantity(Fraction(math.ceil(quantity.value)), quantity.notation)
        usage["requests.storage"] = quantity
        if klass:
            usage[f"{klass}{_STORAGE_CLASS}requests.storage"] = quantity
    return usage


def _service_usage(service: Obj) -> Usage:
    """The Service evaluator's `Usage`."""
    usage: Usage = {"services": ONE, "count/services": ONE}
    spec = service.get("spec") or {}
    kind = spec.get("type", "ClusterIP")
    ports = Quantity.parse(len(spec.get("ports") or ()))
    if kind == "LoadBalancer":
        usage["services.loadbalancers"] = ONE
        if spec.get("allocateLoadBalancerNodePorts", True):
            usage["services.nodeports"] = ports
    elif kind == "NodePort":
        usage["services.nodeports"] = ports
    return usage


def _charged(plural: str, name: str) -> bool:
    """Whether the evaluator of `plural` counts quota resource `name` beyond objects."""
    if plural == "pods":
        extended = name.startswith("requests.") and is_extended(name.removeprefix("requests."))
        return name in _POD_RESOURCES or name.startswith(_HUGEPAGES) or extended
    if plural == "persistentvolumeclaims":
        return name in _CLAIM_RESOURCES or name.endswith(
            tuple(_STORAGE_CLASS + r for r in _CLAIM_RESOURCES)
        )
    return plural == "services" and name in _SERVICE_RESOURCES


@dataclass(frozen=True, slots=True)
class Evaluator:
    """What quota knows of one kind: what its objects cost and which quota resources
    that cost is counted under (`quota.Evaluator`)."""

    resource: ResourceType

    def matching(self, names: Iterable[str]) -> list[str]:
        """`MatchingResources`: the quota resources among `names` this kind is charged."""
        plural = self.resource.plural
        own = {count_name(self.resource), _LEGACY_COUNTS.get(plural, "")}
        return [name for name in names if name in own or _charged(plural, name)]

    def usage(self, obj: Obj, now: datetime) -> Usage:
        plural = self.resource.plural
        if plural == "pods":
            return pod_usage(obj, now)
        if plural == "persistentvolumeclaims":
            return _claim_usage(obj)
        if plural == "services":
            return _service_usage(obj)
        usage = {count_name(self.resource): ONE}
        if plural in _LEGACY_COUNTS and not self.resource.group:
            usage[_LEGACY_COUNTS[plural]] = ONE
        return usage

    def constraints(self, required: Iterable[str], obj: Obj) -> str:
        """The pod evaluator's `Constraints`: "" or what each container must set."""
        if self.resource.plural != "pods":
            return ""
        needed = _MUST_SPECIFY.intersection(required)
        missing: dict[str, set[str]] = {}
        spec = obj.get("spec") or {}
        for container in [*(spec.get("containers") or ()), *(spec.get("initContainers") or ())]:
            written = container.get("resources") or {}
            has = resources.compute_usage(
                resources.parse(written.get("requests")), resources.parse(written.get("limits"))
            )
            for name in needed - set(has):
                missing.setdefault(name, set()).add(container["name"])
        if not missing:
            return ""
        listed = [f"{name} for: {','.join(sorted(missing[name]))}" for name in sorted(missing)]
        return "must specify " + "; ".join(listed)


def _scope_matches(scope: str, operator: str, values: list[str], pod: Obj) -> bool:
    """`podMatchesScopeFunc` for one scope selector requirement."""
    spec = pod.get("spec") or {}
    deadline = spec.get("activeDeadlineSeconds")
    terminating = deadline is not None and deadline >= 0
    best_effort = (pod.get("status") or {}).get("qosClass") == "BestEffort"
    if scope == "Terminating":
        return terminating
    if scope == "NotTerminating":
        return not terminating
    if scope == "BestEffort":
        return best_effort
    if scope == "NotBestEffort":
        return not best_effort
    if scope == "PriorityClass":
        name = spec.get("priorityClassName") or ""
        if operator == "Exists":
            return bool(name)
        if operator == "DoesNotExist":
            return not name
        return (name in values) == (operator == "In") and (bool(name) or operator == "NotIn")
    return False


def _selectors(quota: Obj) -> list[tuple[str, str, list[str]]]:
    spec = quota.get("spec") or {}
    found: list[tuple[str, str, list[str]]] = [
        (scope, "Exists", []) for scope in spec.get("scopes") or ()
    ]
    for term in (spec.get("scopeSelector") or {}).get("matchExpressions") or ():
        scope, operator = term.get("scopeName", ""), term.get("operator", "")
        found.append((scope, operator, term.get("values") or []))
    return found


def _matches_scopes(quota: Obj, resource: ResourceType, obj: Obj) -> bool:
    selectors = _selectors(quota)
    if not selectors:
        return True
    if resource.plural != "pods":
        return False  # other kinds have no scopes of their own here
    return all(_scope_matches(scope, op, values, obj) for scope, op, values in selectors)


def _pretty(values: Mapping[str, Quantity]) -> str:
    """`prettyPrint`: name=value, sorted by name, comma-separated."""
    return ",".join(f"{name}={values[name]}" for name in sorted(values))


# admission -----------------------------------------------------------------------------


class QuotaAdmission:
    """The ResourceQuota admission plugin, for creates (`Objects.admission`)."""

    def __init__(self, objects: Objects) -> None:
        self.objects = objects

    def admit(self, resource: ResourceType, obj: Obj, *, name: str, dry_run: bool) -> None:
        """Refuse `obj` if it would exceed a quota of its namespace, else charge it."""
        namespace = obj["metadata"].get("namespace")
        if not resource.namespaced or not namespace:
            return
        store = self.objects.store
        quotas = [e.obj for e in store.scan(registry.RESOURCE_QUOTA, namespace, _ALL)]
        if not quotas:
            return
        evaluator = Evaluator(resource)
        charged: list[tuple[Obj, Usage]] = []
        usage: Usage | None = None
        for quota in quotas:
            status = quota.get("status") or {}
            hard = resources.parse(status.get("hard"))
            restricted = evaluator.matching(hard)
            if not restricted or not _matches_scopes(quota, resource, obj):
                continue
            quota_name = quota["metadata"]["name"]
            problem = evaluator.constraints(restricted, obj)
            if problem:
                raise _forbidden(resource, name, f"failed quota: {quota_name}: {problem}")
            used = resources.parse(status.get("used"))
            unknown = sorted(r for r in restricted if r not in used)
            if unknown:
                raise _forbidden(
                    resource,
                    name,
                    f"status unknown for quota: {quota_name}, resources: {','.join(unknown)}",
                )
            if usage is None:
                costs = evaluator.usage(obj, self.objects.clock.now())
                usage = {n: q for n, q in costs.items() if q.value}
            requested = {n: q for n, q in usage.items() if n in hard}
            if not requested:
                continue
            exceeded = sorted(
                n for n, q in requested.items() if (used.get(n, _ZERO) + q).value > hard[n].value
            )
            if exceeded:
                raise _forbidden(
                    resource,
                    name,
                    f"exceeded quota: {quota_name}, "
                    f"requested: {_pretty({n: requested[n] for n in exceeded})}, "
                    f"used: {_pretty({n: used[n] for n in exceeded})}, "
                    f"limited: {_pretty({n: hard[n] for n in exceeded})}",
                )
            charged.append((quota, requested))
        if dry_run:
            return
        for quota, requested in charged:
            self._charge(quota, requested)

    def _charge(self, quota: Obj, requested: Usage) -> None:
        """Add an admitted object's cost to `status.used` (`UpdateQuotaStatus`)."""

        def charge(obj: Obj) -> None:
            status = obj.setdefault("status", {})
            used = resources.add(resources.parse(status.get("used")), requested)
            status["used"] = resources.printed(used)

        meta = quota["metadata"]
        self.objects.mutate(registry.RESOURCE_QUOTA, meta["namespace"], meta["name"], charge)


_ZERO = Quantity.parse("0")


def _forbidden(resource: ResourceType, name: str, why: str) -> ApiError:
    """`admission.NewForbidden`: `pods "NAME" is forbidden: ...`."""
    group = f".{resource.group}" if resource.group else ""
    return ApiError(
        403,
        "Forbidden",
        f'{resource.plural}{group} "{name}" is forbidden: {why}',
        details={"name": name, "kind": resource.plural}
        | ({"group": resource.group} if resource.group else {}),
    )


# the controller ------------------------------------------------------------------------


class QuotaController(WorkQueue[Key]):
    """Keeps every quota's `status.hard` and `status.used`; `start()` inside the loop."""

    task_name = "simulator-quota-controller"

    def _observe(self, change: Change) -> None:
        if not self.objects.store.count(registry.RESOURCE_QUOTA):
            return  # the common case: nothing to count for
        resource, obj = change.resource, change.entry.obj
        meta = obj["metadata"]
        if resource is registry.RESOURCE_QUOTA:
            spec_hard = (obj.get("spec") or {}).get("hard")
            old_hard = ((change.old or {}).get("spec") or {}).get("hard")
            if change.type == "ADDED" or (change.type == "MODIFIED" and spec_hard != old_hard):
                self._queue.put_nowait((meta["namespace"], meta["name"]))
            return
        namespace = meta.get("namespace")
        if not namespace or not resource.namespaced:
            return
        now = self.objects.clock.now()
        replenish = change.type == "DELETED" or (
            resource is registry.POD
            and change.old is not None
            and counts_compute(change.old, now)
            and not counts_compute(obj, now)
        )
        if replenish:
            self._replenish(namespace)

    def _replenish(self, namespace: str) -> None:
        for entry in self.objects.store.scan(registry.RESOURCE_QUOTA, namespace, _ALL):
            meta = entry.obj["metadata"]
            self._queue.put_nowait((meta["namespace"], meta["name"]))

    async def _run(self) -> None:
        await asyncio.gather(super()._run(), self._resync())

    async def _resync(self) -> None:
        while True:
            await self.objects.clock.sleep(RESYNC_SECONDS)
            for entry in list(self.objects.store.scan(registry.RESOURCE_QUOTA, None, _ALL)):
                meta = entry.obj["metadata"]
                self._queue.put_nowait((meta["namespace"], meta["name"]))

    def _handle(self, key: Key) -> None:
        """`syncResourceQuota`: recount what the namespace's objects cost."""
        quota = self.objects.find(registry.RESOURCE_QUOTA, *key)
        if quota is None:
            return
        hard = resources.parse((quota.get("spec") or {}).get("hard"))
        used = resources.parse((quota.get("status") or {}).get("used"))
        used.update(self._usage(quota, key[0], hard))
        kept = {n: used[n] for n in hard if n in used}
        status = {"hard": resources.printed(hard), "used": resources.printed(kept)}
        if status == quota.get("status"):
            return

        def sync(obj: Obj) -> None:
            obj["status"] = status

        self.objects.mutate(registry.RESOURCE_QUOTA, *key, sync)

    def _usage(self, quota: Obj, namespace: str, hard: Mapping[str, Quantity]) -> Usage:
        """`CalculateUsage`: per kind whose evaluator matches a hard resource, the sum
        over the namespace's objects (starting from zero for each such resource)."""
        now = self.objects.clock.now()
        totals: Usage = {}
        for resource in registry.RESOURCES:
            if not resource.namespaced:
                continue
            evaluator = Evaluator(resource)
            tracked = evaluator.matching(hard)
            if not tracked:
                continue
            for name in tracked:
                totals.setdefault(name, _ZERO)
            for entry in self.objects.store.scan(resource, namespace, _ALL):
                if not _matches_scopes(quota, resource, entry.obj):
                    continue
                for name, quantity in evaluator.usage(entry.obj, now).items():
                    if name in tracked:
                        totals[name] = totals[name] + quantity
        return totals
