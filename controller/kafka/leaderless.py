"""A consumer group whose rebalance waits for a leader that has left gets one again.

tansu 0.6 (`tansu-broker/src/coordinator/group/administrator.rs`, state `Forming`)
makes the first member to join a rebalance its leader, and only the leader's SyncGroup
completes it. A LeaveGroup from that leader removes the member but not the leadership;
the leader is cleared only when a member that is still in the group misses its
heartbeats. So after the leader leaves mid-rebalance (a graceful stop, or an eviction
of a killed process's member, `groups.py`), the group waits for it for ever: every
member's JoinGroup names the departed leader, every SyncGroup answers
RebalanceInProgress, and no partition is consumed.

tansu elects whoever joins under the leader's member id, so a member of such a group
rejoins under the departed leader's id: it is elected, assigns the partitions, and the
group forms. One member does it, the same one in every process's view: the smallest
member id, seen twice in a row with the same members. Its own former member id leaves
the group only once the leader's id is back in it: until then the others still see it
as the smallest, so none of them switches as well (two processes under one member id
would both be given every partition; the chaos run saw it).

The leader comes from ConsumerGroupDescribe (tansu answers with it as `assignor_name`);
tansu describes a group rebalancing with a leader as `Unknown`. Apache Kafka reports no
such state and has no such fault, so there nothing is ever done.

Switching a member's id reaches into aiokafka's coordinator (`member_id`,
`request_rejoin`): aiokafka has no public way to join under a given member id.
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

import structlog
from aiokafka import AIOKafkaClient
from aiokafka.client import CoordinationType
from aiokafka.errors import IncompatibleBrokerVersion
from aiokafka.protocol.group import LeaveGroupRequest

from lavalog.controller.kafka.groups import (
    REBALANCING_WITH_LEADER,
    GroupLook,
    group_client,
    look_at_group,
)
from lavalog.controller.kafka.settings import KafkaSettings

log = structlog.get_logger("lavalog.kafka")

#: seconds between two looks at a group in which this member has no partitions
CHECK_SECONDS = 1.0


def departed_leader(look: GroupLook) -> str | None:
    """The member id of the leader a rebalancing group waits for although it has left."""
    if look.state != REBALANCING_WITH_LEADER or not look.leader or look.leader in look.members:
        return None
    return look.leader


def repairs(member_id: str, members: Collection[str]) -> bool:
    """Whether `member_id` is the one member of the group that takes the leader's place."""
    return bool(members) and member_id == min(members)


@dataclass(frozen=True, slots=True)
class Repair:
    """What one member knows and has done about its group, between two looks."""

    #: the previous look, when the group waited for a departed leader then
    suspect: GroupLook | None = None
    #: the departed leader whose member id this member has switched to
    taking: str | None = None
    #: this member's id before the switch, to leave once the leader's id is back
    former: str | None = None


@dataclass(frozen=True, slots=True)
class Moves:
    """What to do after a look: remove a member id, rejoin under another."""

    leave: str | None = None
    switch_to: str | None = None


def next_moves(repair: Repair, look: GroupLook, me: str) -> tuple[Repair, Moves]:
    """The repair after a look at the group by the member now called `me`, and what to do."""
    leave = None
    if repair.former is not None and repair.taking in look.members:
        leave = repair.former  # in under the leader's id: the former id goes
    ghost = departed_leader(look)
    if ghost is None:
        # formed again (led by this member, or otherwise: then a former id not left yet
        # expires with its session)
        return Repair(), Moves(leave=leave)
    seen = Repair(look, repair.taking, None if leave else repair.former)
    if repair.suspect != look:
        return seen, Moves(leave=leave)  # first sight, or the group changed: look again
    if repair.taking == ghost:
        # a JoinGroup in flight at the switch may have answered with the old id, which
        # aiokafka took back: switch again
        return seen, Moves(leave=leave, switch_to=None if me == ghost else ghost)
    if me not in look.members or not repairs(me, look.members):
        return seen, Moves(leave=leave)
    return Repair(look, ghost, me), Moves(leave=leave, switch_to=ghost)


class LeaderlessRepair:
    """While `consumer` has no partitions (or a former id of its is still to leave), look
    at its group every CHECK_SECONDS and make the moves `next_moves` says."""

    def __init__(self, consumer: Any, settings: KafkaSettings, group_id: str) -> None:
        self._consumer = consumer
        self._settings = settings
        self._group_id = group_id

    async def run(self) -> None:
        client = group_client(self._settings)
        repair = Repair()
        try:
            await client.bootstrap()
            while True:
                await asyncio.sleep(CHECK_SECONDS)
                if self._consumer.assignment() and repair.former is None:
                    repair = Repair()
                    continue
                try:
                    repair = await self._look_and_move(client, repair)
                except IncompatibleBrokerVersion:
                    return  # no ConsumerGroupDescribe: not tansu, nothing to repair
                except Exception as exc:  # a failed look is tried again at the next
                    log.warning("group look failed", group=self._group_id, error=repr(exc))
        except Exception as exc:
            log.error("leaderless-group repair stopped", group=self._group_id, error=repr(exc))
            raise
        finally:
            await client.close()

    async def _look_and_move(self, client: AIOKafkaClient, repair: Repair) -> Repair:
        group = self._consumer._coordinator
        if group is None:
            return repair  # the consumer is still starting
        coordinator = await client.coordinator_lookup(CoordinationType.GROUP, self._group_id)
        look = await look_at_group(client, coordinator, self._group_id)
        me: str = group.member_id
        after, moves = next_moves(repair, look, me)
        if moves.leave is not None:
            await client.send(coordinator, LeaveGroupRequest(self._group_id, moves.leave))
        if moves.switch_to is not None:
            if after.taking != repair.taking:
                log.warning(
                    "consumer group waits for a leader that left; taking its place",
                    group=self._group_id,
                    leader=moves.switch_to,
                    member=me,
                )
            group.member_id = moves.switch_to
            group.request_rejoin()
        return after
