"""What the decider believes exists: the starting point of a new leader's watch, so that
Jobs and PodGroups deleted while nobody watched are published as deleted.

A watch compares each list with the objects it knew; a new leader knew nothing, so a
Job deleted between two leaders would never be seen as deleted and the decider would
keep it (and its timers) for ever. Before it watches, the leader therefore rebuilds the
decider's own view from the log, as a decider taking a partition over does: each
partition's snapshots on `lavalog.state`, then the observations after its checkpoint,
decided (without producing anything). Every Job and PodGroup in that view becomes an
object the watch already knows (`known_jobs`, `known_podgroups`): the first list then
turns the ones that are gone into `JobDeleted` and `PodGroupObserved(deleted=True)`,
under the ids they would have had if a watcher had seen them go.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping

from aiokafka import TopicPartition

from lavalog.controller.decider.core.partition import PartitionDecider
from lavalog.controller.decider.core.snapshots import restore
from lavalog.controller.decider.core.state import JobState
from lavalog.controller.kafka import KafkaSettings, create_consumer, topic_name
from lavalog.controller.kafka.reading import Records, keyed, partitions_of, read_to_end
from lavalog.controller.watchers.core.objects import Job, ObjectMeta, OwnerReference, PodGroup
from lavalog.events.codec import DecodeError, decode_observation
from lavalog.events.topics import OBSERVED, STATE, split_job_key
from lavalog.events.volcano.api import API_VERSION, KIND


def _meta(state: JobState) -> ObjectMeta:
    namespace, name = split_job_key(state.key)
    return ObjectMeta(name=name, namespace=namespace, uid=state.uid)


def _in(namespace: str | None, state: JobState) -> bool:
    return bool(state.uid) and (namespace is None or split_job_key(state.key)[0] == namespace)


def known_jobs(states: Iterable[JobState], namespace: str | None) -> dict[str, Job]:
    """The Jobs the decider has, by uid, as a watch's memory (no resourceVersion: each one
    listed again is published again, under the id it had)."""
    return {s.uid: Job(metadata=_meta(s)) for s in states if _in(namespace, s)}


def known_podgroups(states: Iterable[JobState], namespace: str | None) -> dict[str, PodGroup]:
    """The PodGroups the decider has seen, by uid, owned by their Jobs."""
    found = {}
    for state in states:
        group = state.podgroup
        if group is None or not group.uid or not _in(namespace, state):
            continue
        job = _meta(state)
        owner = OwnerReference(
            api_version=API_VERSION, kind=KIND, name=job.name, uid=job.uid, controller=True
        )
        meta = ObjectMeta(
            name=group.name, namespace=job.namespace, uid=group.uid, owner_references=(owner,)
        )
        found[group.uid] = PodGroup(metadata=meta)
    return found


async def decider_view(settings: KafkaSettings) -> list[JobState]:
    """Every job state the decider has now, rebuilt from snapshots and the log after them.

    The folding runs in a worker thread: over a long log it takes seconds of CPU, which
    on the event loop would hold up everything else the process does meanwhile: the
    decider's and the actuator's work, and the health probes."""
    state_topic, observed_topic = topic_name(settings, STATE), topic_name(settings, OBSERVED)
    reader = create_consumer(settings, group_id=None)
    await reader.start()
    try:
        # a decider per partition of the facts, from its snapshots (on the partition of the
        # same number), then the facts after them
        observed = [tp.partition for tp in await partitions_of(reader, observed_topic)]
        stored = {tp.partition for tp in await partitions_of(reader, state_topic)}
        snapshots = await read_to_end(
            reader, {TopicPartition(state_topic, n): 0 for n in observed if n in stored}
        )
        deciders = await asyncio.to_thread(_restored, observed, snapshots)
        starts = {TopicPartition(observed_topic, n): d.replay_from for n, d in deciders.items()}
        tails = await read_to_end(reader, starts)
    finally:
        await reader.stop()
    return await asyncio.to_thread(_replayed, deciders, tails)


def _restored(
    partitions: Iterable[int], snapshots: Mapping[TopicPartition, Records]
) -> dict[int, PartitionDecider]:
    """Each partition's decider as its snapshots leave it (none: from the start)."""
    records = {tp.partition: found for tp, found in snapshots.items()}
    restored = {n: restore(keyed(records.get(n, []))) for n in partitions}
    # everything counts as decided already: only the states are wanted, not decisions
    return {n: PartitionDecider(r, committed=2**62) for n, r in restored.items()}


def _replayed(
    deciders: Mapping[int, PartitionDecider], tails: Mapping[TopicPartition, Records]
) -> list[JobState]:
    """The deciders' states once the log after their snapshots is applied."""
    for tp, messages in tails.items():
        decider = deciders[tp.partition]
        for message in messages:
            try:
                decider.apply(message.offset, decode_observation(message.value or b""))
            except DecodeError:
                continue  # the decider dead-letters it: no state
    return [state for decider in deciders.values() for state in decider.states.values()]
