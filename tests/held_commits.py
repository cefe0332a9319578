"""A consumer whose offset commits are held: what a service does while its broker answers one."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable
from typing import Any

from aiokafka import AIOKafkaConsumer


@dataclasses.dataclass
class HeldCommits:
    """Consumers made by `creating(create)`, each commit held until `release` is set
    (the offsets asked are kept in `asked`)."""

    release: asyncio.Event = dataclasses.field(default_factory=asyncio.Event)
    asked: list[dict[Any, int]] = dataclasses.field(default_factory=list)

    def creating(self, create: Callable[..., AIOKafkaConsumer]) -> Callable[..., AIOKafkaConsumer]:
        def create_holding(*args: Any, **kwargs: Any) -> AIOKafkaConsumer:
            consumer = create(*args, **kwargs)
            commit = consumer.commit

            async def held(offsets: dict[Any, int]) -> None:
                self.asked.append(dict(offsets))
                await self.release.wait()
                await commit(offsets)

            consumer.commit = held
            return consumer

        return create_holding
