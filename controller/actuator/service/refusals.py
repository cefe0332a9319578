"""Refused creates as facts on `lavalog.observed`, where the decider learns of them.

The actuator is the one witness of an API server's refusal (a full ResourceQuota's 403),
so it publishes the fact (`CreateFailed`), keyed by job like every fact about the job;
the decider retries the job's sync from it as Volcano requeues a failed sync. The fact
is on the broker before the decision counts as done: a crash before then carries the
decision out again and publishes the same fact (same id), which the decider counts once.
Once on the broker, the fact goes to this process's decider at once (`local_delivery`):
until it has it, the job's later facts in its partition wait for it.
"""

from __future__ import annotations

import structlog
from aiokafka import AIOKafkaProducer
from aiokafka.errors import KafkaError

from lavalog.controller.kafka import KafkaSettings, create_producer, topic_name
from lavalog.controller.kafka.local_delivery import LocalDelivery
from lavalog.controller.retry import KAFKA, RetryDelays, retry
from lavalog.events.codec import encode
from lavalog.events.observations import CreateFailed
from lavalog.events.topics import OBSERVED

_log = structlog.get_logger("lavalog.actuator")


class RefusalPublisher:
    """`await publisher.publish(fact)` between `start()` and `stop()`."""

    def __init__(
        self,
        settings: KafkaSettings,
        *,
        delays: RetryDelays = KAFKA,
        local: LocalDelivery | None = None,
    ) -> None:
        self._topic = topic_name(settings, OBSERVED)
        self._producer: AIOKafkaProducer = create_producer(settings)
        self._delays = delays
        self._local = local

    async def start(self) -> None:
        await self._producer.start()

    async def stop(self) -> None:
        await self._producer.stop()

    async def publish(self, fact: CreateFailed) -> None:
        """Return once the broker has the fact; delivery failures are retried."""
        value, key = encode(fact), fact.key.encode()
        sent = await retry(
            lambda: self._producer.send_and_wait(self._topic, value, key=key),
            delays=self._delays,
            transient=lambda exc: isinstance(exc, KafkaError),
            on_retry=lambda exc, delay: _log.warning(
                "refusal not published, sending again", error=str(exc), delay=round(delay, 2)
            ),
        )
        if self._local is not None:
            self._local.delivered(self._topic, sent.partition, sent.offset, ((key, value),))
