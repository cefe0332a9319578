"""Sample Volcano Jobs (YAML, as a user submits them) shared by tests.

`load_job` reads one and, for tests that need the Job "as read from the API", fills in
what the API server would have set (namespace, uid, status).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

DATA = Path(__file__).parent


def load_job(
    name: str, *, namespace: str = "default", uid: str = "", status: dict[str, Any] | None = None
) -> dict[str, Any]:
    """`tests/data/<name>.yaml`, with metadata.namespace/uid and status added when given."""
    job: dict[str, Any] = yaml.safe_load((DATA / f"{name}.yaml").read_text())
    job["metadata"]["namespace"] = namespace
    if uid:
        job["metadata"]["uid"] = uid
    if status is not None:
        job["status"] = status
    return job
