"""API-level faults: added latency, a share of 500 / 429 answers, requests held back.

They are an aiohttp middleware on the Kubernetes API paths only; the `/sim` admin
endpoints stay reliable so a test can always turn the faults off again. The middleware
also counts the writes it lets through, so a test can tell which were done twice.
"""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from aiohttp import web

from lavalog.simulator.errors import ApiError

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass(slots=True)
class ApiFaults:
    """Current fault settings; change the attributes at any time."""

    latency: float = 0.0  #: real seconds added before every API answer
    error_rate: float = 0.0  #: share of API requests answered 500 InternalError
    throttle_rate: float = 0.0  #: share of API requests answered 429 TooManyRequests
    seed: int | None = None
    #: requests whose path contains a key wait until it is released (`hold`, `release`)
    held: dict[str, asyncio.Event] = field(default_factory=dict)
    #: "METHOD path" -> how many such writes (POST, PUT, PATCH, DELETE) arrived
    writes: Counter[str] = field(default_factory=Counter)
    _random: random.Random = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._random = random.Random(self.seed)

    def check(self) -> None:
        """Raise the injected failure for this request, if one is drawn."""
        draw = self._random.random()
        if draw < self.error_rate:
            raise ApiError(
                500, "InternalError", "Internal error occurred: injected by the simulator"
            )
        if draw < self.error_rate + self.throttle_rate:
            raise ApiError(
                429,
                "TooManyRequests",
                "the server has received too many requests and has asked us to try again later",
                details={"retryAfterSeconds": 1},
            )

    def hold(self, fragment: str) -> None:
        """Hold back every API request whose path contains `fragment` (in-process only)."""
        self.held.setdefault(fragment, asyncio.Event())

    def release(self, fragment: str) -> None:
        """Let the requests held for `fragment` through, and the next ones too."""
        released = self.held.pop(fragment, None)
        if released is not None:
            released.set()

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.path.startswith(("/api", "/version")):
            if request.method not in ("GET", "HEAD"):
                self.writes[f"{request.method} {request.path}"] += 1
            for fragment, released in list(self.held.items()):
                if fragment in request.path:
                    await released.wait()
            if self.latency > 0:
                await asyncio.sleep(self.latency)
            self.check()
        return await handler(request)
