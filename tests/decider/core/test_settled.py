"""A finished job with nothing in flight leaves the decider's working states and its full
snapshot: it is held, and snapshotted, as a compact record, and decided from it exactly
as if it had stayed (`settled`). The property over arbitrary logs is in
`test_properties`."""

from __future__ import annotations

from typing import Any

from lavalog.controller.decider.core import replay
from lavalog.controller.decider.core.partition import PartitionDecider
from lavalog.controller.decider.core.settled import JobStates
from lavalog.controller.decider.core.snapshots import (
    JobSnapshot,
    Restored,
    SettledJobSnapshot,
    encode_record,
    restore,
)
from lavalog.events.decisions import JobDelete, PodsCreate, TimerScheduled
from lavalog.events.observations import AnyObservation
from tests.scenarios import JobScript


def spec(**extra: Any) -> dict[str, Any]:
    template = {"spec": {"containers": [{"name": "c", "image": "i"}]}}
    return {"tasks": [{"name": "w", "replicas": 2, "template": template}], **extra}


def completed(name: str = "done", **extra: Any) -> JobScript:
    script = JobScript(name, spec(**extra)).submit().podgroup("Inqueue")
    return script.pods("w", 2, "Running").after(10).pods("w", 2, "Succeeded")


def decided(log: list[AnyObservation]) -> tuple[PartitionDecider, list[Any]]:
    partition = PartitionDecider(Restored(), committed=0)
    return partition, [d for offset, e in enumerate(log) for d in partition.apply(offset, e)]


def test_a_completed_job_is_held_and_snapshotted_as_a_compact_record():
    script = completed()
    partition, _ = decided(script.events)
    state = partition.states[script.key]
    assert state.phase == "Completed"

    [(key, record), _] = partition.snapshot(len(script.events))

    assert isinstance(partition.states, JobStates)
    assert (partition.states.settled_count, list(partition.states.working())) == (1, [])
    assert key == script.key and isinstance(record, SettledJobSnapshot)
    full = encode_record(JobSnapshot(offset=len(script.events), state=state))
    assert len(encode_record(record)) < len(full) / 2
    assert restore([(key, encode_record(record))]).states[key] == state


def test_a_running_job_is_not_settled():
    script = JobScript("run", spec()).submit().podgroup("Inqueue").pods("w", 2, "Running")
    partition, _ = decided(script.events)

    [(_, record), _] = partition.snapshot(len(script.events))

    assert partition.states.settled_count == 0
    assert isinstance(record, JobSnapshot)


def test_an_aborted_job_restored_from_its_compact_record_resumes_as_if_never_frozen():
    script = JobScript("pause", spec()).submit().podgroup("Inqueue").pods("w", 2, "Running")
    script.command("AbortJob").pods("w", 2, "Running")  # seen terminating
    script.pod_deleted("w", 0).pod_deleted("w", 1)
    settled_at = len(script.events)
    script.after(60).command("ResumeJob").podgroup("Inqueue", uid="pg-again")
    log = script.events
    kept: dict[str, Any] = {}
    expected = [d for _, ds in replay(log, kept) for d in ds]

    partition, before = decided(log[:settled_at])
    assert partition.states.settled_count == 1
    written = [(k, encode_record(r)) for k, r in partition.snapshot(settled_at) if r is not None]
    restored = PartitionDecider(restore(written), committed=settled_at)
    after = [
        d for offset in range(settled_at, len(log)) for d in restored.apply(offset, log[offset])
    ]

    assert before + after == expected
    assert any(isinstance(d, PodsCreate) for d in after)
    assert dict(restored.states) == kept


def test_a_finished_job_waiting_for_its_ttl_stays_until_the_deletion_is_decided():
    script = completed("ttl", ttlSecondsAfterFinished=60)
    partition, decisions = decided(script.events)
    [ttl] = [d for d in decisions if isinstance(d, TimerScheduled)]
    assert partition.states.settled_count == 0
    assert [t.timer_id for t in partition.timers()] == [ttl.timer_id]

    script.after(60).timer(ttl.timer_id)
    fired = partition.apply(len(script.events) - 1, script.last)

    assert [type(d) for d in fired] == [JobDelete]
    assert partition.states.settled_count == 1
    assert list(partition.timers()) == []
