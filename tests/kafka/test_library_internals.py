"""What lavalog relies on inside aiokafka and kubernetes-asyncio, where neither offers a
public way (pyproject.toml bounds both from above; docs/install.md, "Dependencies"). A
release that changes one of these fails here, by name, before it fails somewhere deep:

- aiokafka's consumer group coordinator (`consumer._coordinator`: `member_id`,
  `request_rejoin`): rejoining under a departed leader's member id
  (controller/kafka/leaderless.py);
- `aiokafka.conn.create_conn` and `collect_hosts`: one connection with the real error of a
  failed connect, which the clients hide behind "Unable to bootstrap"
  (controller/kafka/probe.py);
- the protocol classes: DescribeGroups and LeaveGroup answers, sent through the public
  `AIOKafkaClient.send`, and the types ConsumerGroupDescribe is built of
  (controller/kafka/groups.py, consumer_group_describe.py);
- kubernetes-asyncio's REST client session (`ApiClient.rest_client.pool_manager`), replaced by
  one that does not read proxy settings and ~/.netrc per request, and the client's proxy
  and TLS server name (`proxy`, `proxy_headers`, `server_hostname`), with which lavalog
  sends its requests through that session itself (controller/kube.py).
"""

from __future__ import annotations

import inspect
import uuid

import aiohttp
import pytest
from aiokafka import AIOKafkaClient, AIOKafkaConsumer
from aiokafka.client import CoordinationType
from aiokafka.conn import collect_hosts, create_conn
from aiokafka.protocol.admin import DescribeGroupsRequest
from aiokafka.protocol.group import LeaveGroupRequest
from kubernetes_asyncio.client import ApiClient, Configuration

from lavalog.controller.kafka import KafkaSettings
from lavalog.controller.kafka.consumer_group_describe import ConsumerGroupDescribeRequest
from lavalog.controller.kafka.groups import describe_group
from lavalog.controller.kafka.security import connection_options
from lavalog.controller.kafka.topics import topic_name
from lavalog.controller.kube import _no_lookups_per_request
from lavalog.events.topics import OBSERVED

pytestmark = pytest.mark.timeout(60)


def test_collect_hosts_splits_a_bootstrap_list() -> None:
    hosts = collect_hosts("a.example:9092,127.0.0.1:9093", randomize=False)
    assert [(host, port) for host, port, _family in hosts] == [
        ("a.example", 9092),
        ("127.0.0.1", 9093),
    ]


def test_create_conn_takes_the_connection_options() -> None:
    accepted = inspect.signature(create_conn).parameters
    options = connection_options(KafkaSettings())
    del options["bootstrap_servers"]
    assert {"host", "port", "request_timeout_ms", *options} <= accepted.keys()


@pytest.mark.integration
async def test_create_conn_connects_and_closes(kafka_settings: KafkaSettings) -> None:
    options = connection_options(kafka_settings)
    del options["bootstrap_servers"]
    ((host, port, _),) = collect_hosts(kafka_settings.bootstrap_servers, randomize=False)
    connection = await create_conn(host, port, request_timeout_ms=5000, **options)
    assert connection.connected()
    connection.close()


@pytest.mark.integration
async def test_a_group_members_coordinator_has_an_id_and_rejoins(
    kafka_settings: KafkaSettings,
) -> None:
    group = f"{kafka_settings.topic_prefix}internals-{uuid.uuid4().hex[:6]}"
    consumer = AIOKafkaConsumer(
        topic_name(kafka_settings, OBSERVED),
        bootstrap_servers=kafka_settings.bootstrap_servers,
        group_id=group,
        session_timeout_ms=kafka_settings.session_timeout_ms,
        heartbeat_interval_ms=kafka_settings.heartbeat_interval_ms,
    )
    await consumer.start()
    try:
        await consumer.getmany(timeout_ms=3000)
        coordinator = consumer._coordinator
        member_id = coordinator.member_id
        assert isinstance(member_id, str) and member_id
        assert callable(coordinator.request_rejoin)
        # what leaderless.py does: the next join is under the id it sets
        coordinator.request_rejoin()

        client = AIOKafkaClient(bootstrap_servers=kafka_settings.bootstrap_servers)
        await client.bootstrap()
        try:
            node = await client.coordinator_lookup(CoordinationType.GROUP, group)
            for _ in range(50):
                await consumer.getmany(timeout_ms=100)
                state, members = await describe_group(client, node, group)
                if state == "Stable" and members:
                    break
            assert members == {consumer._coordinator.member_id}
            # a LeaveGroup of nobody is answered with an error code, not an exception
            answer = await client.send(node, LeaveGroupRequest(group, f"{group}-nobody"))
            assert isinstance(answer.error_code, int)
        finally:
            await client.close()
    finally:
        await consumer.stop()


def test_the_protocol_requests_lavalog_builds_are_buildable() -> None:
    for request in (
        DescribeGroupsRequest(["g"]),
        LeaveGroupRequest("g", "m"),
        ConsumerGroupDescribeRequest(["g"]),
    ):
        assert request.API_KEY > 0


async def test_the_rest_client_keeps_an_aiohttp_session_lavalog_may_replace() -> None:
    async with ApiClient(Configuration(host="http://127.0.0.1:1")) as api:
        session = api.rest_client.pool_manager
        assert isinstance(session, aiohttp.ClientSession)
        assert session.trust_env  # why it is replaced: proxy and ~/.netrc lookups per request
        _no_lookups_per_request(api)
        assert api.rest_client.pool_manager is not session
        assert not api.rest_client.pool_manager.trust_env
        assert api.rest_client.proxy is None
        assert api.rest_client.proxy_headers is None
        assert api.rest_client.server_hostname is None
    parameters = inspect.signature(ApiClient.update_params_for_auth).parameters
    assert list(parameters)[1:4] == ["headers", "queries", "auth_settings"]
