"""The pytest fixtures of every test that needs a simulated cluster: one set for the suite.

They live with the tests, not in `simulator/`, because `kube` is the controller's own
client: the simulated cluster itself depends on nothing of the product.
`tests/conftest.py` registers this module as a plugin, so every test package has:

- `sim_cluster`: a running `SimulatedCluster`, by default two 8-GPU nodes at
  time_scale=50 (a `sleep 50` container takes one second) with watch bookmarks every
  0.2 s. A test that needs another shape says so with a marker, whose arguments are
  exactly the `SimulatedCluster` it gets:

      @pytest.mark.cluster(nodes=0, history_size=10)
      async def test_history_is_bounded(sim_cluster: SimulatedCluster) -> None: ...

  (a test module: `pytestmark = pytest.mark.cluster(...)`).
- `kube_api`: a kubernetes-asyncio `ApiClient` on it (`api_client(cluster)` for a
  cluster the test makes itself).
- `kube`: the controller's own `Kube` client on it, from its kubeconfig, as
  `lavalog run --kubeconfig` connects.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import pytest_asyncio
from kubernetes_asyncio.client import ApiClient, Configuration

from lavalog.controller.kube import Kube, connect
from lavalog.simulator.server import SimulatedCluster

#: the cluster of a test without a `cluster` marker
DEFAULT_SHAPE: dict[str, Any] = {"nodes": 2, "time_scale": 50, "bookmark_interval": 0.2}


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "cluster(**shape): the test's `sim_cluster` is SimulatedCluster(**shape)"
    )


@asynccontextmanager
async def api_client(cluster: SimulatedCluster) -> AsyncIterator[ApiClient]:
    """A kubernetes-asyncio ApiClient talking to `cluster`."""
    config = Configuration(host=cluster.url)
    async with ApiClient(config) as client:
        yield client


@pytest_asyncio.fixture
async def sim_cluster(request: pytest.FixtureRequest) -> AsyncIterator[SimulatedCluster]:
    marker = request.node.get_closest_marker("cluster")
    shape = marker.kwargs if marker is not None else DEFAULT_SHAPE
    async with SimulatedCluster(**shape) as cluster:
        yield cluster


@pytest_asyncio.fixture
async def kube_api(sim_cluster: SimulatedCluster) -> AsyncIterator[ApiClient]:
    async with api_client(sim_cluster) as client:
        yield client


@pytest_asyncio.fixture
async def kube(sim_cluster: SimulatedCluster) -> AsyncIterator[Kube]:
    async with connect(str(sim_cluster.kubeconfig_path)) as client:
        yield client
