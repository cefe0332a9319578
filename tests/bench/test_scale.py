"""The scale benchmark's reading of its processes' CPU time: which one limits the run on
enough free cores, and how the controller's processes are named in either layout."""

from __future__ import annotations

from bench.harness import LAYOUTS
from bench.scale import busiest_process, controller_names


def test_the_busiest_process_bounds_the_run_on_free_cores() -> None:
    seconds = {"controller": 12.5, "simulated cluster": 20.8, "broker": 4.1, "(wall)": 33.0}

    assert busiest_process(seconds, ["controller", "simulated cluster", "broker"]) == (
        "simulated cluster",
        20.8,
    )
    # among the controller's processes only
    assert busiest_process(seconds, ["controller"]) == ("controller", 12.5)


def test_the_controller_is_one_process_or_one_per_component() -> None:
    assert controller_names(LAYOUTS["one"]) == ("controller",)
    assert controller_names(LAYOUTS["components"]) == (
        "controller (watchers)",
        "controller (decider)",
        "controller (actuator)",
    )
