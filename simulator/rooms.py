"""What each schedulable node has left for new pods, kept in placement order.

Both simulated schedulers put a pod on the fitting node with the most room left for what
it asks (kube-scheduler's LeastAllocated score), ties to the first node by name. A scan
of every node for every pod costs nodes x pods: at Volcano's design scale (100,000 pods
on 400 nodes) most of the simulated cluster's time. `Rooms` keeps, per kind of request,
a heap of the nodes by that same score, so a placement takes the best node that fits.

A node's vector is never changed in place: a placement stores a new one (`rooms[name] =
left`), so a heap entry is current exactly while the map still holds the vector it was
scored from, and a copy (a session's trial of one gang) shares the vectors safely.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Mapping

from lavalog.simulator import vectors
from lavalog.simulator.vectors import Resources

#: heap entry: (minus the score, node name, tie-breaker, the vector scored)
_Entry = tuple[float, str, int, Resources]
#: a request as a heap's key: its (resource, amount) pairs in order
_Request = tuple[tuple[str, float], ...]
#: heaps kept per map; beyond it the least recently built is dropped (and rebuilt if asked)
_MAX_HEAPS = 16
_tiebreak = itertools.count()


def score(requests: Mapping[str, float], room: Mapping[str, float]) -> float:
    """What `room` has left of the requested resources once they are taken (pods aside)."""
    left = 0.0
    for resource, value in requests.items():
        if resource != "pods":
            left += room.get(resource, 0.0) - value
    return left


class Rooms(dict[str, Resources]):
    """Node name -> what it has left, in node-name order, with placement heaps."""

    def __init__(self, items: Mapping[str, Resources] | None = None) -> None:
        super().__init__(items or {})
        self._heaps: dict[_Request, list[_Entry]] = {}

    def __setitem__(self, name: str, room: Resources) -> None:
        super().__setitem__(name, room)
        for key, heap in self._heaps.items():
            heapq.heappush(heap, (-score(dict(key), room), name, next(_tiebreak), room))

    def copy(self) -> Rooms:
        """A trial: the same vectors and heaps, changed apart from this map."""
        trial = Rooms(self)
        trial._heaps = {key: list(heap) for key, heap in self._heaps.items()}
        return trial

    def adopt(self, trial: Rooms) -> None:
        """Take a trial's vectors and heaps (the gang it was made for is bound)."""
        dict.update(self, trial)
        self._heaps = trial._heaps

    def best(self, requests: Resources) -> str | None:
        """The fitting node with the highest `score`, ties to the first by name; None if
        none fits."""
        heap = self._heap(requests)
        passed: list[_Entry] = []
        found = None
        while heap:
            _, name, _, room = heap[0]
            if self.get(name) is not room:
                heapq.heappop(heap)  # replaced since it was scored
            elif vectors.fits(requests, room):
                found = name
                break
            else:
                passed.append(heapq.heappop(heap))
        for entry in passed:
            heapq.heappush(heap, entry)
        return found

    def _heap(self, requests: Resources) -> list[_Entry]:
        key = tuple(requests.items())
        heap = self._heaps.get(key)
        if heap is None:
            if len(self._heaps) >= _MAX_HEAPS:
                del self._heaps[next(iter(self._heaps))]
            heap = [
                (-score(requests, room), name, next(_tiebreak), room) for name, room in self.items()
            ]
            heapq.heapify(heap)
            self._heaps[key] = heap
        return heap
