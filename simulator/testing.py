"""Pytest fixtures for tests that need a cluster: `sim_cluster` and `kube_api`.

Use them from any test package with, in its conftest.py:

    from simulator.testing import kube_api, sim_cluster  # noqa: F401

`sim_cluster` runs two 8-GPU nodes at time_scale=50 (a `sleep 50` container takes one
second); tests that need another shape build their own `SimulatedCluster`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest_asyncio
from kubernetes_asyncio.client import ApiClient, Configuration

from simulator.server import SimulatedCluster


@asynccontextmanager
async def api_client(cluster: SimulatedCluster) -> AsyncIterator[ApiClient]:
    """A kubernetes-asyncio ApiClient talking to `cluster`."""
    config = Configuration(host=cluster.url)
    async with ApiClient(config) as client:
        yield client


@pytest_asyncio.fixture
async def sim_cluster() -> AsyncIterator[SimulatedCluster]:
    async with SimulatedCluster(nodes=2, time_scale=50, bookmark_interval=0.2) as cluster:
        yield cluster


@pytest_asyncio.fixture
async def kube_api(sim_cluster: SimulatedCluster) -> AsyncIterator[ApiClient]:
    async with api_client(sim_cluster) as client:
        yield client
