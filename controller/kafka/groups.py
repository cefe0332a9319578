"""A restarted process takes its predecessor's place in a consumer group at once.

A process that is SIGKILLed sends no LeaveGroup: its member stays in the group, holding
its partitions, until its session times out, and the group waits for it before it lets
the restarted process in. When members are named after their process (`member_client_id`:
the client id carries the process's stable identity, e.g. its pod name, and brokers
make member ids `<client id>-<uuid>`), the restarted process recognises its
predecessor's member by that name and removes it with a LeaveGroup on its behalf
(`evict_predecessors`), then joins as usual. This works on tansu and on Apache Kafka
alike; Apache Kafka also offers static membership (`group.instance.id`, KIP-345),
which `KafkaSettings.static_membership` selects instead (docs/kafka.md).

Only the same identity is ever evicted: identities are unique per live process (two
live processes with one identity would also share the leader Lease). Eviction only
shortens a restart, so it is bounded (`EVICTION_TIMEOUT`): a coordinator that does not
answer in time (tansu can hold a LeaveGroup while the group rebalances) is left to expire
the old member by its session timeout, and the process joins as usual.

tansu (0.6) does not forget a rebalance's leader that leaves by LeaveGroup: the group
then waits for a leader that is gone, and nobody gets partitions (leaderless.py says why
and repairs it). It describes a rebalancing group that has a leader as `Unknown`; so as
not to cause that, an eviction waits until the group is in another state (the rebalance
completed, or the old leader, still a member, missed its heartbeats), or gives up at the
bound. A member that joins between the look and the LeaveGroup can still start a
rebalance that the predecessor leads; the repair covers that. Apache Kafka never
reports `Unknown`, so there nothing waits.
"""

from __future__ import annotations

import asyncio
import uuid

import structlog
from aiokafka.client import AIOKafkaClient, CoordinationType
from aiokafka.errors import for_code
from aiokafka.protocol.admin import DescribeGroupsRequest
from aiokafka.protocol.group import LeaveGroupRequest

from controller.kafka.security import connection_options
from controller.kafka.settings import KafkaSettings

log = structlog.get_logger("lavalog.kafka")

#: seconds an eviction may take before the process joins without it
EVICTION_TIMEOUT = 5.0
#: tansu's name for a rebalancing group with a leader, whose leader must not be removed
REBALANCING_WITH_LEADER = "Unknown"
#: seconds between two looks at a group that is rebalancing
RECHECK_SECONDS = 0.1


def member_client_id(settings: KafkaSettings) -> str:
    """The client id of this process's group members: the settings' client id, plus the
    process's identity when it has one (`lavalog@controller-7d9f-x2x4`)."""
    if not settings.group_instance_id:
        return settings.client_id
    return f"{settings.client_id}@{settings.group_instance_id}"


def is_member_of(member_id: str, client_id: str) -> bool:
    """Whether a broker gave `member_id` to a member with `client_id`: exactly
    `<client id>-<uuid>`, so that `lavalog@a` never matches `lavalog@a-b`'s members."""
    prefix = f"{client_id}-"
    if not member_id.startswith(prefix):
        return False
    try:
        uuid.UUID(member_id[len(prefix) :])
    except ValueError:
        return False
    return True


async def evict_predecessors(settings: KafkaSettings, group_id: str) -> list[str]:
    """Remove the group's members that an earlier process of this identity left behind;
    the member ids removed. A no-op without an identity, or with static membership
    (where the broker hands the restarted member its predecessor's place itself)."""
    if not settings.group_instance_id or settings.static_membership:
        return []
    try:
        async with asyncio.timeout(EVICTION_TIMEOUT):
            return await _evict(settings, group_id)
    except TimeoutError:
        log.warning(
            "could not remove this identity's previous group member in time; it leaves "
            "when its session times out",
            group=group_id,
            within=EVICTION_TIMEOUT,
        )
        return []


async def _evict(settings: KafkaSettings, group_id: str) -> list[str]:
    client_id = member_client_id(settings)
    client = group_client(settings)
    await client.bootstrap()
    try:
        coordinator = await client.coordinator_lookup(CoordinationType.GROUP, group_id)
        members = await _settled_members(client, coordinator, group_id)
        evicted = []
        for member_id in members:
            if not is_member_of(member_id, client_id):
                continue
            answer = await client.send(coordinator, LeaveGroupRequest(group_id, member_id))
            if answer.error_code == 0:  # else it left or timed out meanwhile
                evicted.append(member_id)
    finally:
        await client.close()
    if evicted:
        log.info("removed this identity's previous group member", group=group_id, members=evicted)
    return evicted


async def _settled_members(client: AIOKafkaClient, coordinator: int, group_id: str) -> list[str]:
    """The group's member ids, once none of them may be a rebalance's leader."""
    while True:
        state, members = await describe_group(client, coordinator, group_id)
        if state != REBALANCING_WITH_LEADER:
            return sorted(members)
        await asyncio.sleep(RECHECK_SECONDS)


def group_client(settings: KafkaSettings) -> AIOKafkaClient:
    """An unstarted client for group requests, named as this process's members are."""
    return AIOKafkaClient(**connection_options(settings), client_id=member_client_id(settings))


async def describe_group(
    client: AIOKafkaClient, coordinator: int, group_id: str
) -> tuple[str, frozenset[str]]:
    """The group's state, as its coordinator names it, and its member ids."""
    described = await client.send(coordinator, DescribeGroupsRequest([group_id]))
    (group,) = described.groups
    error_code, _name, state, _protocol_type, _protocol, found, *_ = group
    if error_code:
        raise for_code(error_code)(f"cannot describe consumer group {group_id!r}")
    return state, frozenset(member_id for member_id, *_ in found)
