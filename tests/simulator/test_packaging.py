"""An installed (non-editable) lavalog carries the CRDs its simulator serves."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from simulator import crdgen

ROOT = Path(__file__).resolve().parents[2]


def test_the_wheel_ships_deploy_crds_as_simulator_crds(tmp_path: Path) -> None:
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if built.returncode != 0:
        pytest.skip(f"cannot build a wheel here: {built.stderr.strip()[-300:]}")
    (wheel,) = tmp_path.glob("lavalog-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        shipped = {
            name.removeprefix("simulator/crds/"): archive.read(name).decode()
            for name in archive.namelist()
            if name.startswith("simulator/crds/") and name.endswith(".yaml")
        }
    expected = {p.name: p.read_text() for p in crdgen.SOURCE_DIR.glob("*.yaml")}
    assert shipped == expected
