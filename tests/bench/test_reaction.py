"""The reaction benchmark's arms: what `--arm` accepts, and the code an arm runs."""

from __future__ import annotations

import argparse

import pytest

from bench.harness import ALL_COMPONENTS
from bench.reaction import Arm, checkout, turns


def test_an_arm_names_its_loop_layout_code_and_fetch_wait() -> None:
    arm = Arm.parse("before:loop=asyncio,processes=components,code=main,fetch-wait=5")

    assert arm == Arm(
        "before",
        event_loop="asyncio",
        layout=("watchers", "decider", "actuator"),
        code="main",
        fetch_wait=5,
    )
    assert Arm.parse("plain") == Arm("plain", event_loop="auto", layout=(ALL_COMPONENTS,))


@pytest.mark.parametrize("spec", ["x:loop=trio", "x:processes=two", "x:fetch-wait=0", "x:speed=1"])
def test_an_arm_out_of_its_settings_is_refused_with_them(spec: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="choose loop=auto"):
        Arm.parse(spec)


def test_an_arm_of_another_commit_runs_that_commits_package() -> None:
    with checkout("HEAD") as tree:
        assert (tree / "lavalog" / "controller").is_symlink()
        assert (tree / "controller" / "app.py").is_file()
        assert (tree / "bench" / "harness.py").is_file()


def test_the_arms_take_turns_in_the_other_order_every_other_round() -> None:
    a, b, c = Arm("a"), Arm("b"), Arm("c")

    order = [(number, arm.label) for number, arm in turns([a, b, c], 3)]

    assert order == [
        (0, "a"), (0, "b"), (0, "c"), (1, "c"), (1, "b"), (1, "a"), (2, "a"), (2, "b"), (2, "c")
    ]  # fmt: skip
