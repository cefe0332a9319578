"""What a partition says of its last step (`PartitionDecider.stepped`): the job's state
before the observation and after it, as the service counts Volcano's metrics from them,
without looking the job up again."""

from __future__ import annotations

from lavalog.controller.decider.core import JobState, initial_state, step
from lavalog.controller.decider.core.partition import PartitionDecider
from lavalog.controller.decider.core.snapshots import Restored
from lavalog.controller.decider.core.state import forgettable
from tests.scenarios import JobScript

SPEC = {"tasks": [{"name": "w", "replicas": 2, "template": {"spec": {"containers": [{}]}}}]}


def test_stepped_is_the_state_before_and_after_each_observation() -> None:
    script = JobScript("j", SPEC).submit().podgroup("Inqueue")
    script.pods("w", 2, "Pending").pods("w", 2, "Running").delete()
    partition = PartitionDecider(Restored(), committed=0)
    held: JobState | None = None

    for offset, observation in enumerate(script.events):
        partition.apply(offset, observation)
        after, _ = step(held or initial_state(observation.key), observation)
        expected_after = None if forgettable(after) else after
        assert partition.stepped == (held, expected_after)
        held = expected_after

    assert held is None, "the Job's deletion forgets it: the last step ends with nothing held"


def test_an_observation_its_state_reflects_already_leaves_it_as_it_was() -> None:
    script = JobScript("j", SPEC).submit().podgroup("Inqueue")
    first = PartitionDecider(Restored(), committed=0)
    for offset, observation in enumerate(script.events):
        first.apply(offset, observation)
    state = first.states[script.key]
    restored = Restored(checkpoint=0, states=first.states.copy(), reflects={script.key: 2})
    again = PartitionDecider(restored, committed=2)

    assert again.apply(1, script.events[1]) == []
    assert again.stepped == (state, state)
