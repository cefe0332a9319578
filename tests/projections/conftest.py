from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.json_logs import restored_logging


@pytest.fixture(autouse=True)
def _restored_logging() -> Iterator[None]:
    """`lavalog run` and the projections commands configure the process's logging."""
    with restored_logging():
        yield
