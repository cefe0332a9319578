"""Random bytes on `lavalog.state` between real snapshot records: restoring leaves them
out and restores exactly what the real records say (before, one such record made every
adoption of the partition fail, so a restarted controller decided nothing)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from lavalog.controller.decider.core.partition import PartitionDecider
from lavalog.controller.decider.core.snapshots import Restored, encode_record, restore
from tests.examples.scripts import EXAMPLES

LOG = sorted((event for script in EXAMPLES.values() for event in script()), key=lambda e: e.time)


def real_records() -> list[tuple[str, bytes | None]]:
    partition = PartitionDecider(Restored(), committed=0)
    for offset, event in enumerate(LOG[:30]):
        partition.apply(offset, event)
    return [(k, None if r is None else encode_record(r)) for k, r in partition.snapshot(30)]


REAL = real_records()
KEYS = sorted({key for key, _ in REAL})


@settings(max_examples=200, deadline=None)
@given(
    junk=st.lists(
        st.tuples(
            st.integers(0, len(REAL)),
            st.sampled_from(KEYS) | st.text(max_size=10),
            st.binary(min_size=1, max_size=100),
        ),
        min_size=1,
        max_size=5,
    )
)
def test_records_that_are_not_snapshots_are_left_out(junk: list[tuple[int, str, bytes]]) -> None:
    mixed = list(REAL)
    for position, key, value in sorted(junk, reverse=True):
        mixed.insert(position, (key, value))

    restored = restore(mixed)

    expected = restore(REAL)
    assert (restored.checkpoint, restored.states, restored.reflects) == (
        expected.checkpoint,
        expected.states,
        expected.reflects,
    )
    assert restored.skipped == len(junk)
