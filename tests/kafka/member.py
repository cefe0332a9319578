"""A consumer group member in a process of its own, for tests that SIGKILL it.

    python -m tests.kafka.member BOOTSTRAP CLIENT_ID PREFIX TOPIC GROUP IDENTITY SESSION_MS HEARTBEAT_MS

GROUP is named as lavalog names its groups: under the topic PREFIX.

Prints `joined MEMBER_ID` once it holds partitions, then keeps polling (heartbeats).
"""

from __future__ import annotations

import asyncio
import sys

from lavalog.controller.kafka import KafkaSettings, create_consumer


async def main(argv: list[str]) -> None:
    bootstrap, client_id, prefix, topic, group, identity, session, heartbeat = argv
    settings = KafkaSettings(
        bootstrap_servers=bootstrap,
        client_id=client_id,
        topic_prefix=prefix,
        group_instance_id=identity,
        session_timeout_ms=int(session),
        heartbeat_interval_ms=int(heartbeat),
    )
    consumer = create_consumer(settings, group_id=group)
    consumer.subscribe([topic])
    async with consumer:
        while not consumer.assignment():
            await consumer.getmany(timeout_ms=100)
        print("joined", consumer._coordinator.member_id, flush=True)
        while True:
            await consumer.getmany(timeout_ms=100)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
