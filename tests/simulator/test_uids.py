"""Object uids: random RFC 4122 version 4 UUIDs, as the API server gives them, which a
caller seeding `random` does not make repeat."""

from __future__ import annotations

import random
import uuid

from lavalog.simulator.objects import new_uid


def test_uids_are_version_4_uuids_and_unique() -> None:
    uids = [new_uid() for _ in range(10_000)]
    assert len(set(uids)) == len(uids)
    for uid in uids[:1000]:
        parsed = uuid.UUID(uid)
        assert (parsed.version, parsed.variant, str(parsed)) == (4, uuid.RFC_4122, uid)


def test_seeding_random_does_not_repeat_uids() -> None:
    random.seed(1)
    first = new_uid()
    random.seed(1)
    assert new_uid() != first
