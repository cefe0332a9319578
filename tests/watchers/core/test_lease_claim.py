"""Who may take the leader Lease, and when: a pure decision over the last sighting."""

from __future__ import annotations

from lavalog.controller.watchers.core.lease import Sighting

#: a claim by "replica-a", first seen at t=100 on the candidate's clock
CLAIM = Sighting(holder="replica-a", renew_time="2026-11-22T22:00:00.000000Z", since=100.0)


def test_the_same_identity_takes_its_own_claim_back_at_once() -> None:
    # a restarted process of the holder: its claim, however fresh, is its own
    assert CLAIM.claimable_by("replica-a", duration=15.0, now=100.0)


def test_a_new_identity_waits_until_the_claim_has_gone_unrenewed_for_its_duration() -> None:
    assert not CLAIM.claimable_by("replica-b", duration=15.0, now=100.0)
    assert not CLAIM.claimable_by("replica-b", duration=15.0, now=114.9)
    assert CLAIM.claimable_by("replica-b", duration=15.0, now=115.0)


def test_a_released_lease_is_anyones() -> None:
    released = Sighting(holder="", renew_time="2026-11-22T22:00:00.000000Z", since=100.0)
    assert released.claimable_by("replica-b", duration=15.0, now=100.0)
