"""A partition handed over is snapshotted only at a position its states really reflect.

Found in the churn run: a revocation came while a fetch's decisions were still being
delivered; the released partition was snapshotted with states that already held that
fetch but checkpointed at the position before it, so its next owner applied the fetch
a second time (a pod's failure counted twice: RestartTask decided again and the job
Failed one retry early).
"""

from __future__ import annotations

from lavalog.controller.decider.core.partition import PartitionDecider
from lavalog.controller.decider.core.snapshots import Restored
from lavalog.controller.decider.service.runner import DeciderService
from lavalog.controller.kafka import KafkaSettings
from tests.examples.scripts import tensorflow_restart_task


def owning(decided: int, delivered: int) -> tuple[DeciderService, list[int]]:
    """A service owning partition 0, whose states hold the first `decided` observations
    while its position (what was delivered) is `delivered`; and where it snapshots."""
    service = DeciderService(kafka=KafkaSettings())
    partition = PartitionDecider(Restored(), committed=0)
    for offset, observation in enumerate(tensorflow_restart_task()[:decided]):
        partition.apply(offset, observation)
    service._partitions[0] = partition
    service._positions[0] = delivered
    snapshots: list[int] = []

    async def snapshot(number: int, partition: PartitionDecider, next_offset: int) -> None:
        snapshots.append(next_offset)

    service._snapshot = snapshot  # type: ignore[method-assign]
    return service, snapshots


async def test_a_partition_released_between_fetches_is_snapshotted_at_its_position() -> None:
    service, snapshots = owning(decided=6, delivered=6)
    await service._release([0])
    assert snapshots == [6]
    assert service._partitions == {}


async def test_a_partition_released_while_a_fetch_is_delivered_is_not_snapshotted() -> None:
    service, snapshots = owning(decided=9, delivered=6)
    await service._release([0])
    assert snapshots == []  # its next owner replays from the last snapshot
    assert service._partitions == {}
