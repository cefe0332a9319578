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

tansu (0.6) does not forget the leader of a rebalance (state `Forming`, which it
describes as `Unknown`) that leaves by LeaveGroup: the group then waits for a leader that
is gone, and nobody gets partitions (leaderless.py repairs that). Such a leader is
cleared only when the coordinator finds it silent for a session, which it checks on any
group request of another member. So a predecessor that leads a rebalance is not sent
away: once its session has run out, a LeaveGroup under a member id nobody has (`SWEEP`)
makes the coordinator sweep it out, leadership and all. Any other predecessor leaves at
once (a formed group's leader that leaves is replaced). The leader comes from
ConsumerGroupDescribe, which tansu answers with it; Apache Kafka never reports
`Unknown`, and a leader leaving is no fault there.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import dataclass

import structlog
from aiokafka import AIOKafkaClient
from aiokafka.client import CoordinationType
from aiokafka.errors import IncompatibleBrokerVersion, for_code
from aiokafka.protocol.admin import DescribeGroupsRequest
from aiokafka.protocol.group import LeaveGroupRequest

from lavalog.controller.kafka.consumer_group_describe import ConsumerGroupDescribeRequest
from lavalog.controller.kafka.security import connection_options
from lavalog.controller.kafka.settings import KafkaSettings

log = structlog.get_logger("lavalog.kafka")

#: the member id suffix of the LeaveGroup that sweeps a silent leader out: not a uuid, so
#: no member has it
SWEEP = "sweep"
#: seconds an eviction may take before the process joins without it
EVICTION_TIMEOUT = 5.0
#: tansu's name for a rebalancing group with a leader
REBALANCING_WITH_LEADER = "Unknown"
#: seconds between two sweeps of a group whose leader is a predecessor
RECHECK_SECONDS = 0.1


@dataclass(frozen=True, slots=True)
class GroupLook:
    """What the coordinator says of a group at one moment."""

    state: str
    #: the rebalance's (or the generation's) leader; "" when there is none or the broker
    #: does not tell
    leader: str
    members: frozenset[str]


@dataclass(frozen=True, slots=True)
class Eviction:
    """How a restarted process removes its predecessors from a group."""

    #: members that leave at once
    leave: tuple[str, ...]
    #: the predecessor leading a rebalance, swept out once its session has run out
    sweep: str | None


def eviction(look: GroupLook, client_id: str) -> Eviction:
    """Who of `look`'s members is a predecessor of the process named `client_id`, and how
    each is removed."""
    predecessors = sorted(m for m in look.members if is_member_of(m, client_id))
    leading = look.state == REBALANCING_WITH_LEADER and look.leader in predecessors
    sweep = look.leader if leading else None
    return Eviction(tuple(m for m in predecessors if m != sweep), sweep)


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
    started = time.monotonic()  # the predecessors fell silent before this
    client_id = member_client_id(settings)
    client = group_client(settings)
    await client.bootstrap()
    try:
        coordinator = await client.coordinator_lookup(CoordinationType.GROUP, group_id)
        plan = eviction(await look_at_group(client, coordinator, group_id), client_id)
        evicted = []
        for member_id in plan.leave:
            answer = await client.send(coordinator, LeaveGroupRequest(group_id, member_id))
            if answer.error_code == 0:  # else it left or timed out meanwhile
                evicted.append(member_id)
        if plan.sweep is not None:
            session = settings.session_timeout_ms / 1000
            await asyncio.sleep(max(0.0, started + session - time.monotonic()))
            await _sweep(client, coordinator, group_id, plan.sweep, client_id)
            evicted.append(plan.sweep)
    finally:
        await client.close()
    if evicted:
        log.info("removed this identity's previous group member", group=group_id, members=evicted)
    return evicted


async def _sweep(
    client: AIOKafkaClient, coordinator: int, group_id: str, member_id: str, client_id: str
) -> None:
    """Have the coordinator remove `member_id`, silent for a session, as it removes any
    silent member: on a request of another member (here a LeaveGroup of nobody)."""
    while True:
        await client.send(coordinator, LeaveGroupRequest(group_id, f"{client_id}-{SWEEP}"))
        look = await look_at_group(client, coordinator, group_id)
        if member_id not in look.members:
            return
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


async def look_at_group(client: AIOKafkaClient, coordinator: int, group_id: str) -> GroupLook:
    """The group's state and members, and its leader where the broker tells it."""
    state, members = await describe_group(client, coordinator, group_id)
    try:
        answer = await client.send(coordinator, ConsumerGroupDescribeRequest([group_id]))
    except IncompatibleBrokerVersion:
        return GroupLook(state, "", members)
    (detail,) = answer.groups
    error, _message, _group, _state, _epoch, _assignment_epoch, leader, *_ = detail
    return GroupLook(state, "" if error else leader or "", members)
