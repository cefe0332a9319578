"""Decider throughput: decode + decide + evolve over a generated log, beside decoding alone.

    python bench/decider.py [--events 1000000] [--jobs 10000] [--workers 3] [--profile 20] [--paths]

The log interleaves many jobs, each running a ps/worker lifecycle (one ps, `--workers`
workers) whose workers fail and are restarted (RestartTask) until they succeed, as a busy
cluster would report it. The
baseline is msgspec decoding of the same messages: the ratio says how much the state
machine costs on top of reading its input. Target (docs/benchmarks.md): >= 200,000 events/s.

`--paths` then decides the log once more, timing each fact, and prints how many facts
went each of `step`'s ways (no news, routine, every rule), what each costs, and the most
the decider could reach if the slowest way cost nothing: how far a rule-by-rule tuning
can go before the cost of the other ways bounds it.

`--memory` measures what the decider holds instead: the bytes its job states take (traced
allocations) once every job runs, and once every job has finished, per 1,000 jobs, beside
the same states kept whole in a plain dict (finished jobs not let go).
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import itertools
import pstats
import sys
import time
import tracemalloc
from collections import defaultdict
from collections.abc import Iterator, Mapping, MutableMapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lavalog.controller.decider.core import JobState, initial_state, step
from lavalog.controller.decider.core.evolve import evolve
from lavalog.controller.decider.core.no_news import no_news
from lavalog.controller.decider.core.routine import is_routine
from lavalog.controller.decider.core.settled import JobStates
from lavalog.controller.decider.core.step import Step
from lavalog.events.codec import decode_observation, encode
from lavalog.events.observations import AnyObservation
from tests.scenarios import JobScript

#: workers per job unless told: 4 pods a job
WORKERS = 3


def job_spec(workers: int = WORKERS) -> dict[str, Any]:
    def task(name: str, replicas: int, **extra: Any) -> dict[str, Any]:
        container = {"name": name, "image": "trainer"}
        return {
            "name": name,
            "replicas": replicas,
            "template": {"spec": {"containers": [container]}},
            **extra,
        }

    return {
        "minAvailable": 1 + workers,
        "maxRetry": 1000,
        "tasks": [
            task("ps", 1),
            task("worker", workers, policies=[{"event": "PodFailed", "action": "RestartTask"}]),
        ],
    }


def lifecycle_script(
    name: str, namespace: str, length: int, uid: str | None = None, *, workers: int = WORKERS
) -> JobScript:
    """About `length` observations of one job: start, fail/restart cycles, finish."""
    script = JobScript(name, job_spec(workers), namespace=namespace, uid=uid)
    script.submit().podgroup("Inqueue")
    for task, replicas in (("ps", 1), ("worker", workers)):
        script.pods(task, replicas, "Pending").pods(task, replicas, "Running")
    while len(script.events) < length - 2 * workers - 2:
        script.after(30).pod("worker", 1, "Failed", exit_code=1)
        for worker in range(workers):
            script.pod("worker", worker, "Running" if worker != 1 else "Failed", deleting=True)
        for worker in range(workers):
            script.pod_deleted("worker", worker)
        script.pods("worker", workers, "Pending").pods("worker", workers, "Running")
    script.after(60).pods("worker", workers, "Succeeded").pods("ps", 1, "Succeeded")
    return script


def until_running(workers: int) -> int:
    """The observations of a lifecycle until all its pods run: the Job, its PodGroup, and
    each pod Pending and Running."""
    return 2 + 2 * (1 + workers)


def job_lifecycle(index: int, length: int, workers: int = WORKERS) -> Iterator[bytes]:
    script = lifecycle_script(f"train-{index}", f"team-{index % 50}", length, workers=workers)
    yield from (encode(event) for event in script.events)


def generate(events: int, jobs: int, workers: int = WORKERS) -> list[bytes]:
    """Round-robin interleaving of `jobs` lifecycles: a realistic partition of the log."""
    per_job = events // jobs
    streams = [job_lifecycle(index, per_job, workers) for index in range(jobs)]
    messages: list[bytes] = []
    for batch in itertools.zip_longest(*streams):
        messages.extend(message for message in batch if message is not None)
    return messages


def decode_only(messages: list[bytes]) -> float:
    started = time.perf_counter()
    for message in messages:
        decode_observation(message)
    return time.perf_counter() - started


def decide_all(messages: list[bytes]) -> tuple[float, int]:
    """Decide every message, holding the states as the decider service does (`JobStates`)."""
    states = JobStates()
    decisions = 0
    started = time.perf_counter()
    for message in messages:
        observation = decode_observation(message)
        state = states.get(observation.key)
        if state is None:
            state = initial_state(observation.key)
        state, made = step(state, observation)
        states[observation.key] = state
        decisions += len(made)
    return time.perf_counter() - started, decisions


#: the ways `flow.step` decides a fact, in the order it tries them
NO_NEWS, ROUTINE, EVERY_RULE = "no news", "routine", "every rule"


def path_of(state: JobState, observation: AnyObservation) -> str:
    """The way `step` decides `observation` on `state`, by the tests it makes, in its order."""
    observed = evolve(state, observation)
    if no_news(state, observation, observed):
        return NO_NEWS
    return ROUTINE if is_routine(Step(state, observation, observed)) else EVERY_RULE


@dataclass
class PathCost:
    """The facts one way decided, and the seconds they took: decoded, decided, stored."""

    facts: int = 0
    seconds: float = 0.0


def decide_by_path(messages: list[bytes]) -> dict[tuple[str, str], PathCost]:
    """`decide_all`, each fact timed and filed by the way it went and its kind (the way is
    found apart, untimed)."""
    states = JobStates()
    costs: dict[tuple[str, str], PathCost] = defaultdict(PathCost)
    clock = time.perf_counter
    for message in messages:
        started = clock()
        observation = decode_observation(message)
        before = states.get(observation.key) or initial_state(observation.key)
        states[observation.key], _ = step(before, observation)
        seconds = clock() - started
        cost = costs[(path_of(before, observation), type(observation).__name__)]
        cost.facts += 1
        cost.seconds += seconds
    return costs


def rate_without(costs: Mapping[tuple[str, str], PathCost], free: frozenset[str]) -> float:
    """Facts per second if the facts that went the ways `free` took no time, the others
    theirs."""
    facts = sum(cost.facts for cost in costs.values())
    seconds = sum(cost.seconds for (way, _), cost in costs.items() if way not in free)
    return facts / seconds


def print_paths(costs: Mapping[tuple[str, str], PathCost]) -> None:
    facts = sum(cost.facts for cost in costs.values())
    seconds = sum(cost.seconds for cost in costs.values())
    print(f"\n{'way':<12}{'fact':<18}{'facts':>9}{'share':>8}{'us each':>9}{'of the time':>13}")
    for (way, kind), cost in sorted(costs.items(), key=lambda item: -item[1].seconds):
        print(
            f"{way:<12}{kind:<18}{cost.facts:>9,}{cost.facts / facts:>8.1%}"
            f"{cost.seconds / cost.facts * 1e6:>9.1f}{cost.seconds / seconds:>13.1%}"
        )
    print(f"{'timed one by one':<40}: {rate_without(costs, frozenset()):>12,.0f} events/s")
    for free in ((EVERY_RULE,), (EVERY_RULE, ROUTINE)):
        label = f"if {' and '.join(free)} took no time"
        print(f"{label:<40}: {rate_without(costs, frozenset(free)):>12,.0f} events/s")


def held_bytes(
    states: MutableMapping[str, JobState], logs: list[list[AnyObservation]], workers: int
) -> tuple[int, int]:
    """Bytes the states take once every job runs, and once every job has finished: each
    job's log decided to its last pod Running, then to its end."""
    gc.collect()
    tracemalloc.start()
    try:
        held = []
        running = until_running(workers)
        for part in (slice(None, running), slice(running, None)):
            for events in logs:
                for observation in events[part]:
                    state = states.get(observation.key) or initial_state(observation.key)
                    states[observation.key], _ = step(state, observation)
            gc.collect()
            held.append(tracemalloc.get_traced_memory()[0])
    finally:
        tracemalloc.stop()
    return held[0], held[1]


def memory(jobs: int, per_job: int, workers: int) -> None:
    logs = [
        list(lifecycle_script(f"train-{i}", "team", per_job, workers=workers).events)
        for i in range(jobs)
    ]
    assert all(len(events) > until_running(workers) for events in logs)
    rows = [("JobStates (finished jobs frozen)", JobStates()), ("dict (baseline)", {})]
    print(f"decider state, {jobs:,} jobs of {per_job} observations, bytes per 1,000 jobs:")
    print(f"{'':<34}{'all Running':>14}{'all finished':>14}")
    for name, states in rows:
        running, finished = held_bytes(states, logs, workers)
        print(f"{name:<34}{running * 1000 / jobs:>14,.0f}{finished * 1000 / jobs:>14,.0f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument(
        "--workers",
        type=int,
        default=WORKERS,
        help="workers per job, beside its one ps (what grows with the pods per job)",
    )
    parser.add_argument(
        "--profile",
        type=int,
        default=0,
        metavar="N",
        help="then decide the log once more under cProfile and print the N functions with "
        "the most time of their own (cProfile slows call-heavy code: read it as shares)",
    )
    parser.add_argument(
        "--paths",
        action="store_true",
        help="then decide the log once more, each fact timed, and print the facts and time of "
        "each way `step` decides (no news, routine, every rule) and the rate if the slowest "
        "ways took no time",
    )
    parser.add_argument(
        "--only",
        choices=("decode", "decide"),
        help="run one side only and print nothing else: for counting instructions with "
        "`valgrind --tool=callgrind` (decide's count minus decode's, over the events, is the "
        "decider's instructions per event, whatever the machine's load)",
    )
    parser.add_argument(
        "--memory",
        action="store_true",
        help="measure the bytes the job states take (all Running, all finished) instead",
    )
    args = parser.parse_args()
    if args.memory:
        memory(args.jobs, args.events // args.jobs, args.workers)
        return

    started = time.perf_counter()
    messages = generate(args.events, args.jobs, args.workers)
    if args.only == "decode":
        decode_only(messages)
        return
    if args.only == "decide":
        decide_all(messages)
        return
    print(
        f"generated {len(messages):,} observations of {args.jobs:,} jobs "
        f"in {time.perf_counter() - started:.1f} s"
    )

    baseline = decode_only(messages)
    elapsed, decisions = decide_all(messages)
    count = len(messages)
    print(f"msgspec decode only         : {count / baseline:>12,.0f} events/s  ({baseline:.2f} s)")
    print(
        f"decode + decide + evolve    : {count / elapsed:>12,.0f} events/s  ({elapsed:.2f} s, "
        f"{decisions:,} decisions)"
    )
    print(f"ratio decider / decode      : {baseline / elapsed:.3f}")
    print("target                      :      200,000 events/s")
    if args.profile:
        profiler = cProfile.Profile()
        profiler.runcall(decide_all, messages)
        pstats.Stats(profiler).sort_stats("tottime").print_stats(args.profile)
    if args.paths:
        print_paths(decide_by_path(messages))


if __name__ == "__main__":
    main()
