"""The API's object semantics, shared by the HTTP handlers and the in-process controllers.

Create, update, patch and delete here apply what the real API server applies before
storing: identity (uid, creationTimestamp), generation on spec changes only,
optimistic concurrency, status/spec separation, no-op updates that change nothing,
graceful deletion and finalizers. The scheduler, kubelet and garbage collector write
through this layer too, so what they do looks to a watcher exactly like a real cluster.
"""

from __future__ import annotations

import base64
import binascii
import json
import random
import string
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from lavalog.apimachinery import names
from lavalog.simulator import defaults, fields, patch, registry
from lavalog.simulator.clock import SimClock
from lavalog.simulator.errors import (
    ApiError,
    already_exists,
    bad_request,
    conflict,
    invalid,
    not_found,
)
from lavalog.simulator.registry import ResourceType
from lavalog.simulator.selectors import Selector
from lavalog.simulator.store import Entry, Obj, Store, clone, decode, encode

#: Fields that are not the object's desired state: changing them keeps `generation`.
_NOT_SPEC = ("metadata", "status", "apiVersion", "kind")
_SERVER_META = (
    "uid",
    "creationTimestamp",
    "generation",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "namespace",
    "name",
)


@dataclass(frozen=True, slots=True)
class Page:
    """One list answer: the items, the list's resourceVersion and the next page token."""

    items: list[Entry]
    rv: int
    continue_token: str | None


class Admission(Protocol):
    """A validating admission plugin: sees every create once defaults are filled in, and
    refuses it by raising the API server's `ApiError` (the ResourceQuota plugin)."""

    def admit(self, resource: ResourceType, obj: Obj, *, name: str, dry_run: bool) -> None:
        """`name`: the object's name as the request gave it (a generateName prefix before
        the server picked the name)."""


def _spec_of(obj: Obj) -> Obj:
    return {k: v for k, v in obj.items() if k not in _NOT_SPEC}


class Objects:
    """Create/read/update/patch/delete with Kubernetes API semantics over a `Store`."""

    def __init__(self, store: Store, clock: SimClock) -> None:
        self.store = store
        self.clock = clock
        #: validating admission plugins, in order, for every create
        self.admission: list[Admission] = []

    # reads ---------------------------------------------------------------------

    def read(self, resource: ResourceType, namespace: str, name: str) -> Entry:
        """The stored object with its encoding; 404 if absent."""
        entry = self.store.get(resource, self._key(resource, namespace, name))
        if entry is None:
            raise not_found(resource.plural, name)
        return entry

    def get(self, resource: ResourceType, namespace: str, name: str) -> Obj:
        return self.read(resource, namespace, name).obj

    def find(self, resource: ResourceType, namespace: str, name: str) -> Obj | None:
        entry = self.store.get(resource, self._key(resource, namespace, name))
        return None if entry is None else entry.obj

    def list(
        self,
        resource: ResourceType,
        namespace: str | None,
        selector: Selector,
        *,
        limit: int = 0,
        continue_token: str | None = None,
    ) -> Page:
        after = None
        rv = self.store.rv
        if continue_token:
            rv, after = _decode_continue(continue_token)
        scan = self.store.scan(resource, namespace, selector, after=after)
        if limit <= 0:
            return Page(list(scan), rv, None)
        items: list[Entry] = []
        for entry in scan:
            if len(items) == limit:
                last = items[-1].obj["metadata"]
                token = _encode_continue(rv, (last.get("namespace") or "", last["name"]))
                return Page(items, rv, token)
            items.append(entry)
        return Page(items, rv, None)

    # writes --------------------------------------------------------------------

    def create(
        self,
        resource: ResourceType,
        namespace: str,
        body: Any,
        *,
        validation: str = fields.STRICT,
        warnings: fields.Warnings | None = None,
        dry_run: bool = False,
    ) -> Entry:
        """POST. `validation` is the request's fieldValidation; in-process writers keep
        the default Strict, so a field the simulator itself misspells fails loudly.
        `dry_run` (dryRun=All): every check and default, then nothing stored."""
        obj = self._check_body(resource, body)
        if resource.has_status:
            obj.pop("status", None)  # not settable on create, so never validated either
        fields.admit(resource, obj, validation, warnings)
        meta = obj["metadata"]
        if resource.namespaced:
            if meta.get("namespace", namespace) != namespace:
                raise bad_request(
                    "the namespace of the provided object does not match the namespace "
                    "sent on the request"
                )
            self._check_namespace(namespace)
            meta["namespace"] = namespace
        else:
            meta.pop("namespace", None)
        requested_name = str(meta.get("name") or meta.get("generateName") or "")
        if not meta.get("name"):
            prefix = meta.get("generateName")
            if not prefix:
                raise invalid(
                    resource.kind,
                    "",
                    "metadata.name: Required value: name or generateName is required",
                )
            meta["name"] = prefix + "".join(
                random.choices(string.ascii_lowercase + string.digits, k=5)
            )
        if problems := names.subdomain_errors(meta["name"]):
            shown = json.dumps(meta["name"])
            causes = [f"metadata.name: Invalid value: {shown}: {problem}" for problem in problems]
            listed = causes[0] if len(causes) == 1 else "[" + ", ".join(causes) + "]"
            raise invalid(resource.kind, meta["name"], listed)
        for field in ("resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds"):
            meta.pop(field, None)
        meta["uid"] = new_uid()
        meta["creationTimestamp"] = self.clock.timestamp()
        meta["generation"] = 1
        defaults.apply(resource, obj)
        for plugin in self.admission:  # before storage, which finds a name taken
            plugin.admit(resource, obj, name=requested_name, dry_run=dry_run)
        if self.store.get(resource, self._key(resource, namespace, meta["name"])) is not None:
            raise already_exists(resource.plural, meta["name"])
        if dry_run:
            return Entry(obj, encode(obj))
        return self.store.put(resource, obj).entry

    def update(
        self,
        resource: ResourceType,
        namespace: str,
        name: str,
        body: Any,
        *,
        subresource: str | None = None,
        validation: str = fields.STRICT,
        warnings: fields.Warnings | None = None,
    ) -> Entry:
        """PUT: replace the object (or only its status), guarded by resourceVersion."""
        new = self._check_body(resource, body)
        if new["metadata"].get("name") != name:
            raise bad_request("the name of the object does not match the name on the URL")
        old = self.get(resource, namespace, name)
        wanted = new["metadata"].get("resourceVersion")
        if wanted is None and resource.custom:
            raise invalid(
                resource.kind,
                name,
                "metadata.resourceVersion: Invalid value: 0x0: must be specified for an update",
            )
        return self._replace(resource, old, new, _scope(subresource), wanted, validation, warnings)

    def patch(
        self,
        resource: ResourceType,
        namespace: str,
        name: str,
        content_type: str,
        body: Any,
        *,
        subresource: str | None = None,
        validation: str = fields.STRICT,
        warnings: fields.Warnings | None = None,
    ) -> Entry:
        if content_type == patch.STRATEGIC and resource.custom:
            raise ApiError(
                415,
                "UnsupportedMediaType",
                "strategic merge patch is not supported for custom resources; "
                "use a merge patch or a JSON patch",
            )
        old = self.get(resource, namespace, name)
        new = clone(patch.apply(content_type, old, body))
        wanted = new["metadata"].get("resourceVersion")
        return self._replace(resource, old, new, _scope(subresource), wanted, validation, warnings)

    def mutate(
        self,
        resource: ResourceType,
        namespace: str,
        name: str,
        change: Callable[[Obj], None],
    ) -> Entry:
        """Read-modify-write for in-process controllers: `change` edits a private copy of
        the whole object (spec and status in one write, as a binding does)."""
        old = self.get(resource, namespace, name)
        new = clone(old)
        change(new)
        return self._replace(resource, old, new, "all", None, fields.STRICT, None)

    def rewrite(
        self,
        resource: ResourceType,
        namespace: str,
        name: str,
        build: Callable[[Obj], Obj],
        *,
        subresource: str | None = None,
    ) -> Entry:
        """Read-modify-write for in-process controllers that write often (the kubelet, the
        schedulers): `build` is handed the stored object, which it must not change, and
        returns the new one, sharing every part it keeps as it is. Nothing is copied, and
        only what changed is validated (`schema.apply`'s `stored`). `subresource="status"`:
        a status write, which keeps the stored object but for the status `build` returns."""
        old = self.get(resource, namespace, name)
        scope = "all" if subresource is None else _scope(subresource)
        return self._replace(resource, old, build(old), scope, None, fields.STRICT, None)

    def _replace(
        self,
        resource: ResourceType,
        old: Obj,
        new: Obj,
        scope: str,
        wanted: str | None,
        validation: str,
        warnings: fields.Warnings | None,
    ) -> Entry:
        old_meta = old["metadata"]
        if wanted is not None and wanted != old_meta["resourceVersion"]:
            raise conflict(resource.plural, old_meta["name"])
        if scope == "status":  # the rest as stored: shared, so neither copied nor walked
            status = new.get("status")
            new = {k: v for k, v in old.items() if k != "status"}
            if status is not None:
                new["status"] = status
        elif scope == "spec" and resource.has_status:
            new.pop("status", None)
            if "status" in old:
                new["status"] = old["status"]
        new["apiVersion"], new["kind"] = resource.api_version, resource.kind
        fields.admit(resource, new, validation, warnings, stored=old)
        meta = new["metadata"] = dict(new["metadata"])  # the server's fields go in below
        for field in _SERVER_META:
            if field in old_meta:
                meta[field] = old_meta[field]
            else:
                meta.pop(field, None)
        meta["resourceVersion"] = old_meta["resourceVersion"]
        if old_meta.get("deletionTimestamp") and len(meta.get("finalizers") or ()) > len(
            old_meta.get("finalizers") or ()
        ):
            raise ApiError(
                422,
                "Invalid",
                "metadata.finalizers: Forbidden: no new finalizers can be added "
                "if the object is being deleted",
            )
        if new == old:
            return self._entry(resource, old)  # a no-op stores nothing, sends no event
        if _spec_of(new) != _spec_of(old):
            meta["generation"] = old_meta.get("generation", 1) + 1
        if (
            meta.get("deletionTimestamp")
            and not meta.get("finalizers")
            and not self._awaits_kubelet(resource, new)
        ):
            return self.store.remove(resource, new).entry
        return self.store.put(resource, new).entry

    def delete(
        self,
        resource: ResourceType,
        namespace: str,
        name: str,
        *,
        grace_period: int | None = None,
        propagation: str | None = None,
        preconditions: dict[str, Any] | None = None,
    ) -> Entry:
        """DELETE: graceful for running pods, deferred by finalizers, otherwise immediate."""
        old = self.get(resource, namespace, name)
        meta = old["metadata"]
        for field in ("uid", "resourceVersion"):
            if preconditions and preconditions.get(field) not in (None, meta.get(field)):
                raise conflict(resource.plural, name)
        if propagation == "Orphan":
            self._orphan(meta["uid"])
        new = clone(old)
        nmeta = new["metadata"]
        if propagation == "Foreground" and self.store.dependents(meta["uid"]):
            finalizers = nmeta.setdefault("finalizers", [])
            if "foregroundDeletion" not in finalizers:
                finalizers.append("foregroundDeletion")
        grace = self._grace(resource, new, grace_period)
        if meta.get("deletionTimestamp"):
            if grace == 0 and self._awaits_kubelet(resource, new):
                nmeta["deletionGracePeriodSeconds"] = 0
            else:
                return self._entry(resource, old)
        else:
            nmeta["deletionTimestamp"] = self.clock.timestamp()
            nmeta["deletionGracePeriodSeconds"] = grace
        if nmeta.get("finalizers") or self._awaits_kubelet(resource, new):
            return self.store.put(resource, new).entry
        return self.store.remove(resource, new).entry

    # helpers -------------------------------------------------------------------

    def _grace(self, resource: ResourceType, obj: Obj, grace_period: int | None) -> int:
        if resource is not registry.POD:
            return 0
        if grace_period is not None:
            return max(0, grace_period)
        grace: int = obj["spec"].get("terminationGracePeriodSeconds", 30)
        return grace

    def _awaits_kubelet(self, resource: ResourceType, obj: Obj) -> bool:
        """A pod deleted gracefully stays until its kubelet confirms its containers stopped;
        a namespace stays until the namespace controller has emptied it."""
        if resource is registry.NAMESPACE:
            return bool(obj.get("spec", {}).get("finalizers"))
        if resource is not registry.POD:
            return False
        return (
            bool(obj["spec"].get("nodeName"))
            and obj["metadata"].get("deletionGracePeriodSeconds", 0) > 0
            and obj.get("status", {}).get("phase") not in ("Succeeded", "Failed")
        )

    def _orphan(self, owner_uid: str) -> None:
        for resource, (namespace, name) in self.store.dependents(owner_uid):

            def drop_ref(obj: Obj) -> None:
                refs = obj["metadata"].get("ownerReferences") or []
                obj["metadata"]["ownerReferences"] = [r for r in refs if r.get("uid") != owner_uid]

            self.mutate(resource, namespace, name, drop_ref)

    def _check_body(self, resource: ResourceType, body: Any) -> Obj:
        if not isinstance(body, dict) or not isinstance(body.get("metadata", {}), dict):
            raise bad_request("the request body is not a Kubernetes object")
        if body.get("kind") not in (None, resource.kind):
            raise bad_request(f"the body's kind {body.get('kind')!r} is not {resource.kind}")
        obj: Obj = {"apiVersion": resource.api_version, "kind": resource.kind, **clone(body)}
        obj.setdefault("metadata", {})
        obj["apiVersion"], obj["kind"] = resource.api_version, resource.kind
        return obj

    def _check_namespace(self, namespace: str) -> None:
        ns = self.store.get(registry.NAMESPACE, ("", namespace))
        if ns is None:
            raise not_found("namespaces", namespace)
        if ns.obj["metadata"].get("deletionTimestamp"):
            raise ApiError(
                403,
                "Forbidden",
                f"unable to create new content in namespace {namespace} "
                "because it is being terminated",
            )

    def _entry(self, resource: ResourceType, obj: Obj) -> Entry:
        return self.read(resource, obj["metadata"].get("namespace", ""), obj["metadata"]["name"])

    @staticmethod
    def _key(resource: ResourceType, namespace: str, name: str) -> tuple[str, str]:
        return (namespace if resource.namespaced else "", name)


#: uids' own generator: a test or benchmark seeding `random` does not make them repeat
_UIDS = random.Random()
_VERSION_4 = 0x4000 << 64  # the version nibble
_RFC_4122 = 0x8000 << 48  # the variant bits
_NOT_RANDOM = ~((0xF000 << 64) | (0xC000 << 48))


def new_uid() -> str:
    """A random (version 4) UUID, as the API server gives each object: what
    `str(uuid.uuid4())` makes, in a fraction of its time (every write of an Event
    creates one)."""
    bits = (_UIDS.getrandbits(128) & _NOT_RANDOM) | _VERSION_4 | _RFC_4122
    text = f"{bits:032x}"
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"


def _scope(subresource: str | None) -> str:
    """Which part of the object a client write may change."""
    if subresource in (None, "status"):
        return subresource or "spec"
    raise bad_request(f"subresource {subresource!r} does not accept this verb")


def _encode_continue(rv: int, after: tuple[str, str]) -> str:
    return base64.urlsafe_b64encode(encode({"rv": rv, "after": list(after)})).decode()


def _decode_continue(token: str) -> tuple[int, tuple[str, str]]:
    try:
        data = decode(base64.urlsafe_b64decode(token.encode()))
        return int(data["rv"]), (str(data["after"][0]), str(data["after"][1]))
    except (ValueError, KeyError, IndexError, TypeError, binascii.Error) as exc:
        raise bad_request("invalid continue token") from exc
