"""How often the controller's process runs Python's cyclic garbage collector.

A controller holds hundreds of thousands of long-lived objects that are in no reference
cycle (the Jobs the actuator holds, the decider's job states, the objects the watchers
know), and replaces many of them every second (a Job is held again after each status
write). At CPython's default thresholds (700, 10, 10) the collector walks the young
ones every 700 allocations, and each time the objects that outlived two young passes
grow by a quarter of the old ones it walks the whole heap again: 10,000 one-pod Jobs
made it a third of the controller's CPU (27 passes over the heap of 0.4 s each, the
event loop held meanwhile). Collecting every 100,000 allocations leaves the short-lived
objects to their reference counts, and a pass over the old generation then comes after
hundreds of millions of allocations. Reference cycles are still collected, later: what
they hold stays allocated longer, which the controller's memory figures include
(`bench/scale.py`). The simulated cluster and `lavalog projections serve` (the job
histories it caches) collect as rarely, for the same reason, and so do the benchmarks
that host the simulated cluster in their own process: at the default thresholds its
full passes held it for up to half a second, most of the reaction benchmark's p99.
"""

from __future__ import annotations

import gc

#: allocations between young passes; young passes between middle ones; middle passes
#: between the old generation's (which CPython makes only once its pending objects are
#: a quarter of those already in it)
THRESHOLDS = (100_000, 50, 100)


def collect_rarely() -> None:
    """Set the process's collector for a long-running controller: what exists already
    (modules, classes, the configuration) is never garbage and is not walked again."""
    gc.freeze()
    gc.set_threshold(*THRESHOLDS)
