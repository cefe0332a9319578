"""The resource table: every kind the simulated API serves, described once.

Routing, discovery, storage and watch are generic over this table, so adding a kind
is one row here rather than a new handler.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from lavalog.apimachinery import crds

#: Field selectors every kind supports, as on a real API server.
_META_FIELDS = frozenset({"metadata.name", "metadata.namespace"})


@dataclass(frozen=True, slots=True, eq=False)
class ResourceType:
    """One served resource: where it lives in the API and which subresources it has.

    Each is one instance (the rows below), so it is compared and hashed by identity: it
    is a dict key on every write (the store's tables, its watch wake-ups), where a
    dataclass's hash of all its fields cost a microsecond each time."""

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    subresources: frozenset[str] = frozenset()
    extra_fields: frozenset[str] = frozenset()
    #: Custom resources (CRDs) follow CRD rules: no strategic merge patch, an update
    #: must name the resourceVersion it replaces, fields are checked by the CRD's schema.
    custom: bool = False
    #: where the fields come from: the kubernetes-asyncio model of a core kind
    #: (`V1Pod`), the CRD name of a custom one (`jobs.batch.volcano.sh`)
    schema_source: str = ""

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def has_status(self) -> bool:
        return "status" in self.subresources

    @property
    def field_labels(self) -> frozenset[str]:
        return _META_FIELDS | self.extra_fields

    @property
    def verbs(self) -> list[str]:
        return ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]


def _core(
    kind: str,
    plural: str,
    *,
    namespaced: bool = True,
    short_names: tuple[str, ...] = (),
    subresources: frozenset[str] = frozenset(),
    extra_fields: frozenset[str] = frozenset(),
    model: str = "",
) -> ResourceType:
    return ResourceType(
        "",
        "v1",
        kind,
        plural,
        namespaced,
        short_names,
        subresources,
        extra_fields,
        schema_source=model or f"V1{kind}",
    )


def _custom(crd_name: str) -> ResourceType:
    """A custom resource as its CustomResourceDefinition in deploy/crds declares it."""
    spec = crds.definitions()[crd_name]["spec"]
    (version,) = spec["versions"]
    names = spec["names"]
    return ResourceType(
        spec["group"],
        version["name"],
        names["kind"],
        names["plural"],
        spec["scope"] == "Namespaced",
        short_names=tuple(names.get("shortNames") or ()),
        subresources=frozenset(version.get("subresources") or {}),
        custom=True,
        schema_source=crd_name,
    )


NAMESPACE = _core(
    "Namespace",
    "namespaces",
    namespaced=False,
    short_names=("ns",),
    subresources=frozenset({"status"}),
    extra_fields=frozenset({"status.phase"}),
)
NODE = _core(
    "Node", "nodes", namespaced=False, short_names=("no",), subresources=frozenset({"status"})
)
POD = _core(
    "Pod",
    "pods",
    short_names=("po",),
    subresources=frozenset({"status", "eviction", "binding", "log"}),
    extra_fields=frozenset({"status.phase", "spec.nodeName", "spec.schedulerName"}),
)
SERVICE = _core("Service", "services", short_names=("svc",), subresources=frozenset({"status"}))
CONFIGMAP = _core("ConfigMap", "configmaps", short_names=("cm",))
SECRET = _core("Secret", "secrets", extra_fields=frozenset({"type"}))
EVENT = _core(
    "Event",
    "events",
    short_names=("ev",),
    model="CoreV1Event",
    extra_fields=frozenset(
        {
            "involvedObject.kind",
            "involvedObject.name",
            "involvedObject.namespace",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "source",
            "type",
        }
    ),
)
JOB = _custom("jobs.batch.volcano.sh")
PODGROUP = _custom("podgroups.scheduling.volcano.sh")
QUEUE = _custom("queues.scheduling.volcano.sh")
COMMAND = _custom("commands.bus.volcano.sh")
LEASE = ResourceType("coordination.k8s.io", "v1", "Lease", "leases", True, schema_source="V1Lease")
#: stored and served only: the svc plugin creates them, the priority lookup reads them
NETWORK_POLICY = ResourceType(
    "networking.k8s.io",
    "v1",
    "NetworkPolicy",
    "networkpolicies",
    True,
    short_names=("netpol",),
    schema_source="V1NetworkPolicy",
)
PRIORITY_CLASS = ResourceType(
    "scheduling.k8s.io",
    "v1",
    "PriorityClass",
    "priorityclasses",
    False,
    short_names=("pc",),
    schema_source="V1PriorityClass",
)
PVC = _core(
    "PersistentVolumeClaim",
    "persistentvolumeclaims",
    short_names=("pvc",),
    subresources=frozenset({"status"}),
)
RESOURCE_QUOTA = _core(
    "ResourceQuota", "resourcequotas", short_names=("quota",), subresources=frozenset({"status"})
)


def _installed(
    group: str, kind: str, plural: str, *, namespaced: bool = True, status: bool = False
) -> ResourceType:
    """A kind an installation creates (deploy/): stored and served, with no behaviour."""
    return ResourceType(
        group,
        "v1",
        kind,
        plural,
        namespaced,
        subresources=frozenset({"status"}) if status else frozenset(),
        schema_source=f"V1{kind}",
    )


#: what `kubectl apply -k deploy/...` creates besides the kinds above (tests dry-run it)
SERVICE_ACCOUNT = _installed("", "ServiceAccount", "serviceaccounts")
DEPLOYMENT = _installed("apps", "Deployment", "deployments", status=True)
DISRUPTION_BUDGET = _installed("policy", "PodDisruptionBudget", "poddisruptionbudgets", status=True)
CLUSTER_ROLE = _installed(
    "rbac.authorization.k8s.io", "ClusterRole", "clusterroles", namespaced=False
)
CLUSTER_ROLE_BINDING = _installed(
    "rbac.authorization.k8s.io", "ClusterRoleBinding", "clusterrolebindings", namespaced=False
)
#: a namespace's own grants (lavalog.simulator.rbac evaluates all four RBAC kinds)
ROLE = _installed("rbac.authorization.k8s.io", "Role", "roles")
ROLE_BINDING = _installed("rbac.authorization.k8s.io", "RoleBinding", "rolebindings")
CRD = _installed(
    "apiextensions.k8s.io",
    "CustomResourceDefinition",
    "customresourcedefinitions",
    namespaced=False,
    status=True,
)

RESOURCES: tuple[ResourceType, ...] = (
    NAMESPACE,
    NODE,
    POD,
    SERVICE,
    CONFIGMAP,
    SECRET,
    EVENT,
    PVC,
    RESOURCE_QUOTA,
    JOB,
    PODGROUP,
    QUEUE,
    COMMAND,
    LEASE,
    NETWORK_POLICY,
    PRIORITY_CLASS,
    SERVICE_ACCOUNT,
    DEPLOYMENT,
    DISRUPTION_BUDGET,
    CLUSTER_ROLE,
    CLUSTER_ROLE_BINDING,
    ROLE,
    ROLE_BINDING,
    CRD,
)

_BY_PATH: dict[tuple[str, str, str], ResourceType] = {
    (r.group, r.version, r.plural): r for r in RESOURCES
}


def lookup(group: str, version: str, plural: str) -> ResourceType | None:
    return _BY_PATH.get((group, version, plural))


def group_versions() -> dict[str, list[str]]:
    """API group name -> its versions, in table order ("" is the core group)."""
    found: dict[str, list[str]] = {}
    for r in RESOURCES:
        versions = found.setdefault(r.group, [])
        if r.version not in versions:
            versions.append(r.version)
    return found


def in_group_version(group: str, version: str) -> Iterable[ResourceType]:
    return (r for r in RESOURCES if r.group == group and r.version == version)


def by_kind(api_version: str, kind: str) -> ResourceType | None:
    """The served resource of an ownerReference's apiVersion and kind."""
    return next((r for r in RESOURCES if r.api_version == api_version and r.kind == kind), None)
