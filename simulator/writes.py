"""Writes made through the HTTP API, as they were sent and as they were stored.

A real API server drops an unknown field of a written object with no more than a
`Warning` header, so a controller writing a misspelt field works on the simulator and
loses that field on a real cluster alike. Tests that pin lavalog's wire format listen
here (`SimulatedCluster.on_write`): each successful create, update or patch, with the
body as the client sent it, the object as stored and the unknown fields the server
dropped.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lavalog.simulator.registry import ResourceType

Obj = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Write:
    """One successful create (POST), update (PUT) or patch (PATCH)."""

    method: str
    resource: ResourceType
    subresource: str | None
    #: the request body as the client sent it (a patch document for PATCH)
    sent: Any
    #: the object as the server stored it
    stored: Obj
    #: the API server's Warning texts: one `unknown field "<path>"` per pruned field
    warnings: tuple[str, ...]
    user_agent: str


WriteListener = Callable[[Write], None]


class WriteLog:
    """Calls its listeners with every write; costs nothing while nobody listens."""

    def __init__(self) -> None:
        self.listeners: list[WriteListener] = []

    def sent_copy(self, body: Any) -> Any:
        """What to keep of a body before the server prunes it in place."""
        return copy.deepcopy(body) if self.listeners else None

    def record(self, write: Write) -> None:
        for listener in self.listeners:
            listener(write)
