"""An installed (non-editable) lavalog: one import package, carrying the CRDs its simulator
serves, and installable beside distributions that own the root folders' names."""

from __future__ import annotations

import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

from lavalog.apimachinery import crdgen

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert built.returncode == 0, built.stderr
    (path,) = out.glob("lavalog-*.whl")
    return path


def test_the_wheel_ships_deploy_crds_inside_the_package(wheel: Path) -> None:
    prefix = "lavalog/apimachinery/crds/"
    with zipfile.ZipFile(wheel) as archive:
        shipped = {
            name.removeprefix(prefix): archive.read(name).decode()
            for name in archive.namelist()
            if name.startswith(prefix) and name.endswith(".yaml")
        }
    expected = {p.name: p.read_text() for p in crdgen.SOURCE_DIR.glob("*.yaml")}
    assert shipped == expected


def test_the_wheel_installs_one_import_package(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        tops = {name.split("/")[0] for name in archive.namelist()}
    assert {top for top in tops if not top.endswith(".dist-info")} == {"lavalog"}


def _other_distribution(where: Path) -> Path:
    """A wheel of a distribution that owns the top-level `events` package, as the PyPI
    distribution `events` does (written here: the tests reach no package index)."""
    path = where / "events-0.5.0-py3-none-any.whl"
    files = {
        "events/__init__.py": "OWNER = 'events'\n",
        "events-0.5.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: events\nVersion: 0.5.0\n",
        "events-0.5.0.dist-info/WHEEL": "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = [f"{name},," for name in files] + ["events-0.5.0.dist-info/RECORD,,"]
    with zipfile.ZipFile(path, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
        archive.writestr("events-0.5.0.dist-info/RECORD", "\n".join(record) + "\n")
    return path


def test_installed_beside_a_distribution_named_events_both_stay_intact(
    wheel: Path, tmp_path: Path
) -> None:
    environment = tmp_path / "venv"
    venv.create(environment, with_pip=True)
    python = environment / "bin" / "python"
    other = _other_distribution(tmp_path)
    for order in ([other, wheel], [wheel, other]):
        for path in order:
            installed = subprocess.run(
                [python, "-m", "pip", "install", "--no-deps", "--no-index", "-q",
                 "--force-reinstall", str(path)],
                capture_output=True, text=True, timeout=300, check=False,
            )  # fmt: skip
            assert installed.returncode == 0, installed.stderr
        both = subprocess.run(
            [python, "-c", "import events, lavalog.events; print(events.OWNER, lavalog.events.__name__)"],
            capture_output=True, text=True, timeout=60, check=False, cwd=tmp_path,
        )  # fmt: skip
        assert (both.returncode, both.stdout) == (0, "events lavalog.events\n"), both.stderr
