"""Placement order: the heap-kept best node is the one a scan of every node picks."""

from __future__ import annotations

import random

from lavalog.simulator import vectors
from lavalog.simulator.rooms import Rooms, score
from lavalog.simulator.vectors import Resources


def scanned(requests: Resources, rooms: dict[str, Resources]) -> str | None:
    """Every node in name order, the fitting one with the highest score, first on ties."""
    best, best_score = None, -1.0
    for name in sorted(rooms):
        room = rooms[name]
        if vectors.fits(requests, room) and score(requests, room) > best_score:
            best, best_score = name, score(requests, room)
    return best


def take(rooms: Rooms, name: str, requests: Resources) -> None:
    left = dict(rooms[name])
    vectors.add(left, requests, -1)
    rooms[name] = left


def test_best_is_the_scans_choice_through_placements_trials_and_discards() -> None:
    rng = random.Random(7)
    sizes = [{"cpu": 1.0, "memory": 2.0, "pods": 1.0}, {"cpu": 0.5, "pods": 1.0}, {"gpu": 1.0}]
    rooms = Rooms(
        {
            f"node-{i:02d}": {"cpu": float(rng.choice([2, 4, 8])), "memory": 16.0, "pods": 5.0}
            | ({"gpu": 2.0} if i % 7 == 0 else {})
            for i in range(30)
        }
    )
    placed = 0
    for _ in range(400):
        trial = rooms.copy()
        for _ in range(rng.randint(1, 4)):
            requests = rng.choice(sizes)
            chosen = trial.best(requests)
            assert chosen == scanned(requests, trial)
            if chosen is not None:
                take(trial, chosen, requests)
                placed += 1
        if rng.random() < 0.6:
            rooms.adopt(trial)
    assert placed > 100
    for requests in sizes:  # the cluster filled up: the scan and the heap agree on None too
        while (chosen := rooms.best(requests)) is not None:
            assert chosen == scanned(requests, rooms)
            take(rooms, chosen, requests)
        assert scanned(requests, rooms) is None


def test_ties_go_to_the_first_node_by_name() -> None:
    rooms = Rooms({name: {"cpu": 4.0} for name in ("a", "b", "c")})
    assert rooms.best({"cpu": 1.0}) == "a"
    take(rooms, "a", {"cpu": 1.0})
    assert rooms.best({"cpu": 1.0}) == "b"
    take(rooms, "b", {"cpu": 1.0})
    take(rooms, "c", {"cpu": 1.0})
    assert rooms.best({"cpu": 1.0}) == "a"
