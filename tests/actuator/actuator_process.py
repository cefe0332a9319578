"""An actuator in a process of its own, for a test to kill with SIGKILL (a crash: no
drain, no final commit).

    python -m tests.actuator.actuator_process KUBECONFIG GROUP   # LAVALOG_* name the broker
"""

from __future__ import annotations

import asyncio
import sys

from lavalog.controller.actuator.service.runner import ActuatorService
from lavalog.controller.kafka import KafkaSettings
from lavalog.controller.kube import connect


async def main(kubeconfig: str, group: str) -> None:
    async with connect(kubeconfig) as kube:
        service = ActuatorService(
            kube=kube, kafka=KafkaSettings.from_env(), group_id=group, qps=1000, burst=1000
        )
        await service.run()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
