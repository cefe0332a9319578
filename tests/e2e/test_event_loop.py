"""`lavalog run --event-loop`: the controller runs on uvloop when it is installed (the
default, `auto`, and in the image), on Python's own loop when asked, and says which."""

from __future__ import annotations

import pytest

from lavalog.controller.kafka import KafkaSettings
from lavalog.simulator.server import SimulatedCluster
from tests.e2e.test_http_host import controller

pytestmark = pytest.mark.integration


@pytest.mark.cluster(nodes=1)
@pytest.mark.parametrize(
    ("option", "running"),
    [
        ((), "uvloop"),
        (("--event-loop", "asyncio"), "asyncio"),
        (("--event-loop", "uvloop"), "uvloop"),
    ],
    ids=["auto", "asyncio", "uvloop"],
)
async def test_the_controller_runs_on_the_loop_chosen(
    e2e_kafka: KafkaSettings,
    sim_cluster: SimulatedCluster,
    option: tuple[str, ...],
    running: str,
) -> None:
    pytest.importorskip("uvloop", reason="the dev environment installs lavalog[fast]")
    async with controller(e2e_kafka, sim_cluster, "--http-port", "0", *option) as started:
        assert started["event_loop"] == running
