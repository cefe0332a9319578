"""A kubeconfig that points kubectl and kubernetes clients at the simulated cluster."""

from __future__ import annotations

from pathlib import Path

import yaml

CONTEXT = "lavalog-sim"


def render(url: str, *, namespace: str = "default") -> str:
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": CONTEXT, "cluster": {"server": url}}],
        "users": [{"name": CONTEXT, "user": {}}],
        "contexts": [
            {
                "name": CONTEXT,
                "context": {"cluster": CONTEXT, "user": CONTEXT, "namespace": namespace},
            }
        ],
        "current-context": CONTEXT,
        "preferences": {},
    }
    return yaml.safe_dump(doc, sort_keys=False)


def write(path: Path, url: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render(url))
    return path
