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
group forms. Its own member id leaves the group (it was not the leader, so that is
safe). One member does it, the same one in every process's view: the smallest member id.

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
from aiokafka.client import AIOKafkaClient, CoordinationType
from aiokafka.errors import IncompatibleBrokerVersion
from aiokafka.protocol.group import LeaveGroupRequest

from controller.kafka.consumer_group_describe import ConsumerGroupDescribeRequest
from controller.kafka.groups import REBALANCING_WITH_LEADER, describe_group, group_client
from controller.kafka.settings import KafkaSettings

log = structlog.get_logger("lavalog.kafka")

#: seconds between two looks at a group in which this member has no partitions
CHECK_SECONDS = 1.0


@dataclass(frozen=True, slots=True)
class GroupLook:
    """What the coordinator says of a group at one moment."""

    state: str
    #: the rebalance's (or the generation's) leader; "" when there is none
    leader: str
    members: frozenset[str]


def departed_leader(look: GroupLook) -> str | None:
    """The member id of the leader a rebalancing group waits for although it has left."""
    if look.state != REBALANCING_WITH_LEADER or not look.leader or look.leader in look.members:
        return None
    return look.leader


def repairs(member_id: str, members: Collection[str]) -> bool:
    """Whether `member_id` is the one member of the group that takes the leader's place."""
    return bool(members) and member_id == min(members)


class LeaderlessRepair:
    """While `consumer` has no partitions, look at its group every CHECK_SECONDS; when the
    group waits for a departed leader (seen twice in a row) and this member is the one to
    act, rejoin under the leader's member id."""

    def __init__(self, consumer: Any, settings: KafkaSettings, group_id: str) -> None:
        self._consumer = consumer
        self._settings = settings
        self._group_id = group_id
        #: the departed leader whose member id this member has switched to
        self._taking: str | None = None

    async def run(self) -> None:
        client = group_client(self._settings)
        try:
            await client.bootstrap()
            suspect: str | None = None
            while True:
                await asyncio.sleep(CHECK_SECONDS)
                if self._consumer.assignment():
                    suspect = None
                    continue
                try:
                    suspect = await self._look_and_repair(client, suspect)
                except IncompatibleBrokerVersion:
                    return  # no ConsumerGroupDescribe: not tansu, nothing to repair
                except Exception as exc:  # a failed look is tried again at the next
                    log.debug("group look failed", group=self._group_id, error=str(exc))
        finally:
            await client.close()

    async def _look_and_repair(self, client: AIOKafkaClient, suspect: str | None) -> str | None:
        """One look; the departed leader seen now, to be confirmed by the next look."""
        coordinator = await client.coordinator_lookup(CoordinationType.GROUP, self._group_id)
        look = await _look(client, coordinator, self._group_id)
        ghost = departed_leader(look)
        if ghost is None or ghost != suspect:
            self._taking = None
            return ghost
        group = self._consumer._coordinator
        me: str = group.member_id
        if self._taking == ghost:
            if me != ghost:
                # a JoinGroup in flight when the id was switched answered with the old
                # one, and aiokafka took it back: switch again
                group.member_id = ghost
                group.request_rejoin()
            return ghost
        if me not in look.members or not repairs(me, look.members):
            return ghost
        log.warning(
            "consumer group waits for a leader that left; taking its place",
            group=self._group_id,
            leader=ghost,
            member=me,
        )
        self._taking = ghost
        group.member_id = ghost
        await client.send(coordinator, LeaveGroupRequest(self._group_id, me))
        group.request_rejoin()
        return ghost


async def _look(client: AIOKafkaClient, coordinator: int, group_id: str) -> GroupLook:
    state, members = await describe_group(client, coordinator, group_id)
    if state != REBALANCING_WITH_LEADER:
        return GroupLook(state, "", members)
    answer = await client.send(coordinator, ConsumerGroupDescribeRequest([group_id]))
    (detail,) = answer.groups
    _error, _message, _group, _state, _epoch, _assignment_epoch, leader, *_ = detail
    return GroupLook(state, leader or "", members)
