"""Kafka's ConsumerGroupDescribe request (API key 69, KIP-848), which aiokafka lacks
(classes named as aiokafka names its own).

lavalog sends it for one thing: tansu answers it with the group's current rebalance
leader (as `assignor_name`), which DescribeGroups does not tell
(controller/kafka/leaderless.py). Version 0 only, as tansu 0.6 serves it.
"""

from __future__ import annotations

import uuid
from io import BytesIO
from typing import TypeAlias

from aiokafka.protocol.api import Request, RequestStruct, Response
from aiokafka.protocol.types import (
    AbstractType,
    Boolean,
    CompactArray,
    CompactString,
    Int16,
    Int32,
    Schema,
    TaggedFields,
)


class Uuid(AbstractType[uuid.UUID]):  # type: ignore[misc]
    """Kafka's `uuid`: 16 bytes, big-endian."""

    @classmethod
    def encode(cls, value: uuid.UUID) -> bytes:
        return value.bytes

    @classmethod
    def decode(cls, data: BytesIO) -> uuid.UUID:
        raw = data.read(16)
        if len(raw) != 16:
            raise ValueError("Buffer underrun decoding uuid")
        return uuid.UUID(bytes=raw)


_ASSIGNMENT = Schema(
    (
        "topic_partitions",
        CompactArray(
            ("topic_id", Uuid),
            ("topic_name", CompactString("utf-8")),
            ("partitions", CompactArray(Int32)),
            ("tags", TaggedFields),
        ),
    ),
    ("tags", TaggedFields),
)


class ConsumerGroupDescribeResponse_v0(Response):  # type: ignore[misc]
    API_KEY = 69
    API_VERSION = 0
    SCHEMA = Schema(
        ("throttle_time_ms", Int32),
        (
            "groups",
            CompactArray(
                ("error_code", Int16),
                ("error_message", CompactString("utf-8")),
                ("group_id", CompactString("utf-8")),
                ("group_state", CompactString("utf-8")),
                ("group_epoch", Int32),
                ("assignment_epoch", Int32),
                ("assignor_name", CompactString("utf-8")),
                (
                    "members",
                    CompactArray(
                        ("member_id", CompactString("utf-8")),
                        ("instance_id", CompactString("utf-8")),
                        ("rack_id", CompactString("utf-8")),
                        ("member_epoch", Int32),
                        ("client_id", CompactString("utf-8")),
                        ("client_host", CompactString("utf-8")),
                        ("subscribed_topic_names", CompactArray(CompactString("utf-8"))),
                        ("subscribed_topic_regex", CompactString("utf-8")),
                        ("assignment", _ASSIGNMENT),
                        ("target_assignment", _ASSIGNMENT),
                        ("tags", TaggedFields),
                    ),
                ),
                ("authorized_operations", Int32),
                ("tags", TaggedFields),
            ),
        ),
        ("tags", TaggedFields),
    )


class ConsumerGroupDescribeRequest_v0(RequestStruct):  # type: ignore[misc]
    FLEXIBLE_VERSION = True
    API_KEY = 69
    API_VERSION = 0
    RESPONSE_TYPE = ConsumerGroupDescribeResponse_v0
    SCHEMA = Schema(
        ("group_ids", CompactArray(CompactString("utf-8"))),
        ("include_authorized_operations", Boolean),
        ("tags", TaggedFields),
    )


ConsumerGroupDescribeRequestStruct: TypeAlias = ConsumerGroupDescribeRequest_v0


class ConsumerGroupDescribeRequest(Request[ConsumerGroupDescribeRequestStruct]):  # type: ignore[misc]
    """Describe `group_ids`; a broker without the API refuses it before it is sent
    (aiokafka raises IncompatibleBrokerVersion)."""

    API_KEY = 69

    def __init__(self, group_ids: list[str]) -> None:
        self._group_ids = group_ids

    def build(
        self, request_struct_class: type[ConsumerGroupDescribeRequestStruct]
    ) -> ConsumerGroupDescribeRequestStruct:
        return request_struct_class(self._group_ids, False, {})
