"""Versioned in-memory storage: objects, indexes, the change history and change wake-ups.

The store knows nothing of API rules (see `objects.py`); it keeps what etcd and the
watch cache keep. Every write takes the next global resourceVersion and appends one
`Change` to the history, so the history is contiguous: the change with version `v`
sits at a computable index, and a watch from `v` is a slice. Stored objects are never
mutated after being written (writers hand in fresh dicts), so history entries and
list results can share them, and each object is encoded to JSON exactly once.
"""

from __future__ import annotations

import asyncio
import bisect
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import msgspec

from lavalog.simulator.errors import ApiError, gone
from lavalog.simulator.registry import RESOURCES, ResourceType
from lavalog.simulator.selectors import Selector

Obj = dict[str, Any]
Key = tuple[str, str]  # (namespace, name); namespace is "" for cluster-scoped kinds

encode = msgspec.json.Encoder().encode
decode = msgspec.json.Decoder().decode


def clone(obj: Obj) -> Obj:
    """A deep copy that a writer may mutate (a JSON round trip: faster than deepcopy)."""
    result: Obj = decode(encode(obj))
    return result


def key_of(obj: Obj) -> Key:
    meta = obj["metadata"]
    return (meta.get("namespace") or "", meta["name"])


@dataclass(frozen=True, slots=True)
class Entry:
    """A stored object and its JSON encoding."""

    obj: Obj
    raw: bytes


@dataclass(frozen=True, slots=True)
class Change:
    """One write: what a watch sends as ADDED, MODIFIED or DELETED."""

    rv: int
    type: str
    resource: ResourceType
    entry: Entry
    old: Obj | None


@dataclass(slots=True)
class _Table:
    """The objects of one kind with the indexes lists use."""

    objects: dict[Key, Entry] = field(default_factory=dict)
    by_namespace: dict[str, dict[Key, Entry]] = field(default_factory=dict)
    by_label: dict[tuple[str, str], set[Key]] = field(default_factory=dict)
    sorted_keys: list[Key] | None = None

    def index(self, key: Key, entry: Entry | None, old: Entry | None) -> None:
        if old is not None:
            for pair in (old.obj["metadata"].get("labels") or {}).items():
                keys = self.by_label.get(pair)
                if keys is not None:
                    keys.discard(key)
                    if not keys:
                        del self.by_label[pair]
        if entry is None:
            del self.objects[key]
            namespace = self.by_namespace[key[0]]
            del namespace[key]
            if not namespace:
                del self.by_namespace[key[0]]
            self.sorted_keys = None
            return
        if old is None:
            self.sorted_keys = None
        self.objects[key] = entry
        self.by_namespace.setdefault(key[0], {})[key] = entry
        for pair in (entry.obj["metadata"].get("labels") or {}).items():
            self.by_label.setdefault(pair, set()).add(key)

    def keys_in_order(self) -> list[Key]:
        if self.sorted_keys is None:
            self.sorted_keys = sorted(self.objects)
        return self.sorted_keys


class Store:
    """All objects of all kinds, one global resourceVersion and a bounded change history."""

    def __init__(self, *, history_size: int = 100_000) -> None:
        self.history_size = history_size
        self.rv = 0
        self._tables = {r: _Table() for r in RESOURCES}
        self._history: list[Change] = []
        #: Versions up to this one are no longer in the history: watching from them is 410.
        self.compacted_rv = 0
        self._owners: dict[str, set[tuple[ResourceType, Key]]] = {}
        self._listeners: list[Callable[[Change], None]] = []
        #: set and cleared by every write of its kind: a watch wakes for its own kind only,
        #: as each kind has its own watch cache in kube-apiserver
        self._changed = {r: asyncio.Event() for r in RESOURCES}
        #: Bumped to close every open watch (the "drop all watches" fault).
        self.watch_epoch = 0
        #: epoch -> the error the watches closed by bumping to it end with (`fail_watches`)
        self.watch_errors: dict[int, ApiError] = {}
        #: watch streams open, by resource
        self.watching: Counter[ResourceType] = Counter()

    # reads ---------------------------------------------------------------------

    def get(self, resource: ResourceType, key: Key) -> Entry | None:
        return self._tables[resource].objects.get(key)

    def count(self, resource: ResourceType) -> int:
        return len(self._tables[resource].objects)

    def scan(
        self,
        resource: ResourceType,
        namespace: str | None,
        selector: Selector,
        *,
        after: Key | None = None,
    ) -> Iterator[Entry]:
        """Matching entries in (namespace, name) order, starting after `after`."""
        table = self._tables[resource]
        keys = table.keys_in_order()
        start = 0 if after is None else bisect.bisect_right(keys, after)
        if namespace is not None:
            start = max(start, bisect.bisect_left(keys, (namespace, "")))
        candidates: set[Key] | None = None
        for pair in selector.index_terms():
            found = table.by_label.get(pair, set())
            candidates = found if candidates is None or len(found) < len(candidates) else candidates
        if candidates is not None and len(candidates) < len(keys) // 8:
            ordered = sorted(k for k in candidates if (after is None or k > after))
            keys, start = ordered, 0
        objects = table.objects
        for key in keys[start:] if start else keys:
            if namespace is not None and key[0] != namespace:
                if key[0] > namespace:
                    return
                continue
            entry = objects[key]
            if selector.empty or selector.matches(entry.obj):
                yield entry

    def dependents(self, owner_uid: str) -> list[tuple[ResourceType, Key]]:
        return list(self._owners.get(owner_uid, ()))

    # writes --------------------------------------------------------------------

    def put(self, resource: ResourceType, obj: Obj) -> Change:
        """Store a new or replaced object (owned by the store from now on)."""
        self.rv += 1
        obj["metadata"]["resourceVersion"] = str(self.rv)
        key = key_of(obj)
        table = self._tables[resource]
        old = table.objects.get(key)
        entry = Entry(obj, encode(obj))
        table.index(key, entry, old)
        self._index_owners(resource, key, old.obj if old else None, obj)
        return self._record(
            Change(
                self.rv, "MODIFIED" if old else "ADDED", resource, entry, old.obj if old else None
            )
        )

    def remove(self, resource: ResourceType, obj: Obj) -> Change:
        """Delete an object; `obj` is its final state, sent in the DELETED event."""
        self.rv += 1
        obj["metadata"]["resourceVersion"] = str(self.rv)
        key = key_of(obj)
        table = self._tables[resource]
        old = table.objects[key]
        table.index(key, None, old)
        self._index_owners(resource, key, old.obj, None)
        return self._record(Change(self.rv, "DELETED", resource, Entry(obj, encode(obj)), old.obj))

    def _index_owners(
        self, resource: ResourceType, key: Key, old: Obj | None, new: Obj | None
    ) -> None:
        for obj, add in ((old, False), (new, True)):
            for ref in (obj or {}).get("metadata", {}).get("ownerReferences") or ():
                deps = self._owners.setdefault(ref["uid"], set())
                if add:
                    deps.add((resource, key))
                else:
                    deps.discard((resource, key))
                    if not deps:
                        del self._owners[ref["uid"]]

    def _record(self, change: Change) -> Change:
        self._history.append(change)
        if len(self._history) > 2 * self.history_size:
            self.compact(keep=self.history_size)
        for listener in self._listeners:
            listener(change)
        changed = self._changed[change.resource]
        changed.set()
        changed.clear()
        return change

    # history and watch support ---------------------------------------------------

    def subscribe(self, listener: Callable[[Change], None]) -> None:
        """Call `listener` synchronously after every write (in-process controllers)."""
        self._listeners.append(listener)

    def changes_since(self, rv: int) -> list[Change]:
        """The changes after version `rv`; 410 Gone if some of them were compacted away."""
        if rv < self.compacted_rv:
            raise gone(f"too old resource version: {rv} ({self.compacted_rv + 1})")
        return self._history[rv - self.compacted_rv :]

    async def wait(self, resource: ResourceType) -> None:
        """Return after the next write of `resource` (or after `drop_watches`)."""
        await self._changed[resource].wait()

    def compact(self, *, keep: int = 0) -> None:
        """Forget all but the last `keep` changes: watches from older versions get 410."""
        drop = max(0, len(self._history) - keep)
        del self._history[:drop]
        self.compacted_rv += drop

    def fail_watches(self, error: ApiError) -> None:
        """End every open watch with an ERROR event carrying `error`."""
        self.watch_errors[self.watch_epoch + 1] = error
        self.drop_watches()

    def drop_watches(self) -> None:
        self.watch_epoch += 1
        for changed in self._changed.values():
            changed.set()
            changed.clear()
