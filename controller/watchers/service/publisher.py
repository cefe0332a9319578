"""Observations to `lavalog.observed`, keyed by job, each batch delivered before the next.

`publish` returns only when the broker has acknowledged every message of the batch
(acks=all, from the shared producer settings): the watch loop asks for its next batch,
and so moves its position, only after that. A message that fails is sent again, with
every later message of the same job after it, so that one job's facts stay in order; a
message that had gone through is then sent twice, with its id, which consumers drop.
Each message delivered is handed to this process's decider at once (`local_delivery`).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import structlog
from aiokafka import AIOKafkaProducer
from aiokafka.errors import KafkaError

from lavalog.controller.kafka import KafkaSettings, create_producer, topic_name
from lavalog.controller.kafka.local_delivery import LocalDelivery
from lavalog.controller.retry import KAFKA, Backoff, RetryDelays, retry
from lavalog.controller.watchers.core.resend import to_resend
from lavalog.events import topics
from lavalog.events.codec import encode
from lavalog.events.observations import AnyObservation

log = structlog.get_logger("lavalog.watchers")


class Publisher:
    """Sends batches of observations and waits for their delivery, retrying failures."""

    def __init__(
        self,
        producer: AIOKafkaProducer,
        topic: str,
        *,
        delays: RetryDelays = KAFKA,
        local: LocalDelivery | None = None,
    ) -> None:
        self._producer = producer
        self._topic = topic
        self._delays = delays
        self._local = local

    async def publish(self, batch: Sequence[AnyObservation]) -> None:
        """Return when every observation of `batch` is on the broker."""
        pending = list(batch)
        backoff = Backoff(self._delays)
        while pending:
            failures = await self._send(pending)
            pending = to_resend(pending, failures)
            if pending:
                delay = backoff.next_delay()
                first = next(f for f in failures if f is not None)
                log.warning(
                    "delivery failed, sending again",
                    messages=len(pending),
                    error=f"{type(first).__name__}: {first}",
                    delay=round(delay, 2),
                )
                await asyncio.sleep(delay)

    async def _send(self, batch: Sequence[AnyObservation]) -> list[KafkaError | None]:
        """Queue every message (the producer batches them), then await each delivery."""
        deliveries: list[tuple[asyncio.Future[Any] | KafkaError, bytes, bytes]] = []
        for observation in batch:
            key, value = observation.key.encode(), encode(observation)
            try:
                deliveries.append(
                    (await self._producer.send(self._topic, value, key=key), key, value)
                )
            except KafkaError as exc:  # not queued: e.g. no metadata for the topic yet
                deliveries.append((exc, key, value))
        failures: list[KafkaError | None] = []
        for delivery, key, value in deliveries:
            if isinstance(delivery, KafkaError):
                failures.append(delivery)
                continue
            try:
                sent = await delivery
            except KafkaError as exc:
                failures.append(exc)
                continue
            failures.append(None)
            if self._local is not None:
                self._local.delivered(self._topic, sent.partition, sent.offset, ((key, value),))
        return failures


@asynccontextmanager
async def open_publisher(
    settings: KafkaSettings, *, delays: RetryDelays = KAFKA, local: LocalDelivery | None = None
) -> AsyncIterator[Publisher]:
    """A started producer for `lavalog.observed`, stopped (and flushed) on exit; retried
    until the broker is reachable."""

    async def started() -> AIOKafkaProducer:
        # No linger: `publish` queues a whole batch before the producer's sender runs and
        # then waits for its delivery, so lingering would only hold every batch back
        # (and with it a failed pod's replacement) for `linger_ms`.
        producer = create_producer(settings, linger_ms=0)
        try:
            await producer.start()
        except BaseException:
            await producer.stop()
            raise
        return producer

    producer = await retry(
        started,
        delays=delays,
        transient=lambda exc: isinstance(exc, KafkaError),
        on_retry=lambda exc, delay: log.warning(
            "cannot reach Kafka, retrying", error=str(exc), delay=round(delay, 2)
        ),
    )
    try:
        yield Publisher(producer, topic_name(settings, topics.OBSERVED), delays=delays, local=local)
    finally:
        await producer.stop()
