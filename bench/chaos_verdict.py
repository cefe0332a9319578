"""The chaos run's verdict: what each run left behind, and how the run with faults compares
with the one without.

- lost: the job's final phase or retryCount differs from the run without faults, or the
  job never settles;
- duplicate: a pod (name, job version) created while another of that name and version
  existed, or created more often than without faults beyond what the faults removed;
- left running: a pod pending or running for a finished job, or its PodGroup;
- dead letters: each one is one of the undecodable messages the run sent, and each of
  those is dead-lettered;
- audit: every recorded decision is recomputed from the recorded observations
  (`lavalog audit`'s check) for every job.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
import msgspec

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.chaos_faults import Faults
from bench.chaos_figures import Figures
from bench.chaos_workload import Obj, Planned
from bench.harness import Cluster, read_topic, say
from lavalog.controller.decider.core import replay
from lavalog.controller.kafka import KafkaSettings, topic_name
from lavalog.events import topics
from lavalog.events.codec import DecodeError, LogEvent, decode_event
from lavalog.events.deadletter import DeadLetter
from lavalog.projections.core.audit import audit


@dataclass
class Outcome:
    #: job -> (phase, retryCount); "" for a job that did not settle
    jobs: dict[str, tuple[str, int]]
    #: the simulator's record of pod creations
    created: list[Obj]
    left_running: list[str]
    settle_seconds: float
    settled: bool
    letters: list[DeadLetter]
    #: recorded decisions, those recomputed alike, jobs audited, jobs consistent
    audit: tuple[int, int, int, int]
    faults: Faults | None = None
    differences: list[str] = field(default_factory=list)
    #: job -> where an unsettled job stopped ("Pending v0", or "no status")
    stuck: dict[str, str] = field(default_factory=dict)
    figures: Figures | None = None


async def creations(cluster: Cluster) -> list[Obj]:
    async with aiohttp.ClientSession() as http, http.get(f"{cluster.url}/sim/pods/created") as got:
        items: list[Obj] = (await got.json())["items"]
        return items


async def dead_letters(kafka: KafkaSettings) -> list[DeadLetter]:
    records = await read_topic(kafka, topics.DEADLETTER, kafka.deadletter_partitions)
    return [msgspec.json.decode(r.value, type=DeadLetter) for r in records]


async def audit_all(
    kafka: KafkaSettings, progress: Callable[[str], None] = say
) -> tuple[int, int, int, int]:
    """`lavalog audit` of every job, from the topics: (decisions recorded, reproduced
    field for field, jobs, jobs without a difference)."""
    events: dict[str, list[LogEvent]] = {}
    for topic, partitions in (
        (topics.OBSERVED, kafka.observed_partitions),
        (topics.DECISIONS, kafka.decisions_partitions),
    ):
        for record in await read_topic(kafka, topic, partitions):
            try:
                event = decode_event(record.value)
            except DecodeError:
                continue  # dead-lettered: accounted for by the dead letter check
            events.setdefault(event.key, []).append(event)
    progress(f"chaos: auditing {len(events)} jobs")
    recorded = reproduced = consistent = 0
    for key in sorted(events):
        report = audit(events[key], replay)
        wrong = {d.id for d in report.differences if d.recorded is not None}
        recorded += report.recorded
        reproduced += report.recorded - len(wrong)
        consistent += report.ok
        if not report.ok:
            say(
                f"audit {key}: "
                + "; ".join(
                    f"{d.kind} {d.id} {d.type} ({', '.join(d.fields)})" for d in report.differences
                )
            )
    return recorded, reproduced, len(events), consistent


@dataclass
class Verdict:
    lost: list[str]
    duplicates: list[str]
    left_running: list[str]
    unaccounted_letters: list[str]
    #: replica processes that exited without being killed
    died: list[str]
    compared: int
    timing_dependent: int

    @property
    def ok(self) -> bool:
        return not (
            self.lost
            or self.duplicates
            or self.left_running
            or self.unaccounted_letters
            or self.died
        )


def compare(reference: Outcome | None, chaotic: Outcome) -> Verdict:
    """`chaotic` against `reference`; without one, against nothing but itself (a job that
    never settled is lost, a pod alive twice is a duplicate)."""
    faults = chaotic.faults
    assert faults is not None
    if reference is None:
        reference = Outcome(
            jobs=dict(chaotic.jobs), created=[], left_running=[], settle_seconds=0.0,
            settled=True, letters=[], audit=(0, 0, 0, 0),
        )  # fmt: skip
        compared_with_reference = False
    else:
        compared_with_reference = True
    lost = [
        f"{name}: never settled ({chaotic.stuck.get(name, '?')})"
        for name, (phase, _) in chaotic.jobs.items()
        if not phase
    ]
    compared = 0
    for name, (phase, retries) in chaotic.jobs.items():
        if not phase or name in faults.node_lost:
            continue
        compared += compared_with_reference
        if (phase, retries) != reference.jobs[name]:
            lost.append(f"{name}: {phase}/{retries}, without faults {reference.jobs[name]}")
    lost += [f"{n}: did not settle without faults" for n, (p, _) in reference.jobs.items() if not p]
    return Verdict(
        lost=lost,
        duplicates=duplicates(reference.created, chaotic.created, faults),
        left_running=chaotic.left_running + reference.left_running,
        unaccounted_letters=unaccounted(chaotic.letters, faults.poison, faults.kafka),
        died=faults.died,
        compared=compared,
        timing_dependent=len(faults.node_lost),
    )


def _key(record: Obj) -> tuple[str, int]:
    return record["name"], int(record["jobVersion"] or -1)


def duplicates(reference: list[Obj], chaotic: list[Obj], faults: Faults) -> list[str]:
    """Pods made twice: one (name, version) alive twice at once, or made more often than
    without faults beyond the pods of that (name, version) the faults removed."""
    found = []
    alive: dict[tuple[str, int], Obj] = {}
    for record in sorted(chaotic, key=lambda r: r["createdVersion"]):
        key = _key(record)
        before = alive.get(key)
        if before is not None and (
            before["deletedVersion"] is None or before["deletedVersion"] > record["createdVersion"]
        ):
            found.append(f"{key[0]} v{key[1]}: created while {before['uid']} existed")
        alive[key] = record
    expected = Counter(_key(r) for r in reference)
    if not reference:
        return found  # nothing to count creations against
    for key, times in Counter(_key(r) for r in chaotic).items():
        job_name = key[0].rsplit("-", 2)[0]
        if job_name in faults.node_lost:
            continue
        extra = times - expected[key] - faults.removed[key]
        if extra > 0:
            found.append(
                f"{key[0]} v{key[1]}: created {times} times, {expected[key]} without faults, "
                f"{faults.removed[key]} removed by faults"
            )
    return found


def unaccounted(
    letters: list[DeadLetter], poison: set[tuple[int, int]], kafka: KafkaSettings
) -> list[str]:
    observed = topic_name(kafka, topics.OBSERVED)
    lettered = {(d.partition, d.offset) for d in letters if d.topic == observed}
    wrong = [
        f"dead letter {d.topic}[{d.partition}]@{d.offset} by {d.consumer}: {d.error}"
        for d in letters
        if d.topic != observed or (d.partition, d.offset) not in poison
    ]
    wrong += [f"poison {p}@{o} never dead-lettered" for p, o in sorted(poison - lettered)]
    return wrong


@dataclass
class Report:
    planned: list[Planned]
    #: None when the run without faults was skipped
    reference: Outcome | None
    chaotic: Outcome
    verdict: Verdict

    @property
    def audit_share(self) -> float:
        recorded, reproduced, _, _ = self.chaotic.audit
        return 100.0 * reproduced / recorded if recorded else 0.0

    @property
    def ok(self) -> bool:
        runs = [run for run in (self.reference, self.chaotic) if run is not None]
        return self.verdict.ok and all(
            run.settled and run.audit[0] == run.audit[1] and run.audit[2] == run.audit[3]
            for run in runs
        )
