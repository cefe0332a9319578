"""`lavalog validate` on one Job of 10,000 tasks: libyaml's loader beside PyYAML's own.

    python bench/validate.py [--tasks 10000] [--repeat 3]

Times the whole command (read, admission, unknown-field check, verdict) the way a user
runs it, once with the loader it uses (libyaml's CSafeLoader when PyYAML has it) and
once with the pure-Python SafeLoader as the baseline, best of `--repeat` each.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lavalog.cli.commands import validate
from lavalog.cli.main import main


def manifest(tasks: int) -> str:
    job = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "wide", "namespace": "bench"},
        "spec": {
            "minAvailable": tasks,
            "tasks": [
                {
                    "name": f"task-{i}",
                    "replicas": 1,
                    "policies": [{"event": "PodFailed", "action": "RestartTask"}],
                    "template": {
                        "metadata": {"labels": {"app": "wide", "index": str(i)}},
                        "spec": {
                            "containers": [
                                {
                                    "name": "main",
                                    "image": "trainer:1",
                                    "resources": {"requests": {"cpu": "1", "memory": "1Gi"}},
                                }
                            ]
                        },
                    },
                }
                for i in range(tasks)
            ],
        },
    }
    return yaml.safe_dump(job, sort_keys=False)


def seconds(path: Path, loader: Any, repeat: int) -> float:
    validate.LOADER = loader
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()) as out:
            code = main(["validate", str(path)])
        best = min(best, time.perf_counter() - started)
        assert code == 0, out.getvalue()
    return best


def bench() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "wide.yaml"
        path.write_text(manifest(args.tasks))
        size = path.stat().st_size
        print(f"lavalog validate, one Job of {args.tasks:,} tasks ({size / 1e6:.1f} MB of YAML)")
        rows: list[tuple[str, Any]] = [("SafeLoader (pure Python, baseline)", yaml.SafeLoader)]
        if yaml.__with_libyaml__:
            rows.append(("CSafeLoader (libyaml, what validate uses)", yaml.CSafeLoader))
        else:
            print("PyYAML was built without libyaml: only the baseline can be measured")
        figures = [(name, seconds(path, loader, args.repeat)) for name, loader in rows]
    baseline = figures[0][1]
    for name, took in figures:
        print(f"  {name:<42} {took:6.2f} s   {baseline / took:5.1f}x")


if __name__ == "__main__":
    bench()
