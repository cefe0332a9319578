"""A restart delayed by the restart backoff extension says so on every timeline: the
projections' model and API, `lavalog timeline`, and the web UI's decision marks."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from lavalog.cli.main import main
from lavalog.controller.decider.core import replay
from lavalog.events.codec import LogEvent
from lavalog.projections.core.fold import new_history, record
from lavalog.projections.core.timeline import build_timeline
from lavalog.projections.service.sources.file import read_file
from lavalog.projections.service.store.writer import Store, load
from tests.projections.helpers import write_events
from tests.projections.service.test_browser import (  # noqa: F401 (a fixture)
    browser_page,
    chromium,
    serving,
)
from tests.scenarios import JobScript

CONTAINER = {"containers": [{"name": "main", "image": "busybox"}]}
SPEC = {
    "minAvailable": 2,
    "maxRetry": 3,
    "policies": [{"event": "PodFailed", "action": "RestartJob"}],
    "tasks": [
        {"name": name, "replicas": 1, "template": {"spec": CONTAINER}} for name in ("ps", "worker")
    ],
}
DELAYED = "delayed 20s by restart backoff (restart 2)"


def backed_off_twice() -> list[LogEvent]:
    """The worker fails twice; each RestartJob waits (10 s, then 20 s) and then happens."""
    script = JobScript("bo", SPEC, start=1_767_225_600.0)
    script.submit(annotations={"lavalog.io/restart-backoff": "10s,2,5m"}).podgroup("Inqueue")
    for version in range(2):
        for phase in ("Pending", "Running"):
            script.pod("ps", 0, phase, version=version).pod("worker", 0, phase, version=version)
        script.pod("worker", 0, "Failed", exit_code=1, version=version)
        failure = script.events[-1]
        script.at(failure.time + 10.0 * 2**version).timer(f"{failure.id}#timer")
        script.pod_deleted("ps", 0, version=version).pod_deleted("worker", 0, version=version)
    return [event for o, ds in replay(script.events) for event in (o, *ds)]


def test_the_timer_mark_names_the_backoff_and_when_it_is_due():
    events = backed_off_twice()
    history = new_history(events[0])
    for event in events:
        record(history, event)

    timeline = build_timeline(history)

    timers = [m for m in timeline.decisions if m.type == "TimerScheduled"]
    assert [(m.action, m.reason) for m in timers] == [
        ("RestartJob", "delayed 10s by restart backoff (restart 1)"),
        ("RestartJob", DELAYED),
    ]
    restarts = [m for m in timeline.decisions if m.type == "ActionDecided"]
    assert [m.time for m in restarts] == [m.fire_at for m in timers]
    assert [m.timer_id for m in restarts] == [m.timer_id for m in timers]


def test_lavalog_timeline_prints_the_cause(capsys, tmp_path):
    log = write_events(tmp_path / "log.jsonl", backed_off_twice())

    code = main(["timeline", "default/bo", "--file", str(log)])

    out = capsys.readouterr().out
    assert code == 0
    assert (
        "TimerScheduled RestartJob on PodFailed (job#0) pod bo-worker-0 exit code 1 node node-0"
        f" {DELAYED}" in out
    )


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[str]:
    store = Store(tmp_path / "s.sqlite")
    load(store, read_file(write_events(tmp_path / "log.jsonl", backed_off_twice())))
    async with serving(store) as url:
        yield url


@pytest.mark.browser
@pytest.mark.timeout(120)
async def test_the_web_ui_shows_the_cause_on_the_timer_mark(chromium, served):  # noqa: F811
    async with browser_page(chromium) as page:
        await page.goto(served + "#/jobs/default/bo")
        await page.wait_for_selector("#gantt g.decision-mark")
        marks = await page.eval_on_selector_all(
            "#gantt g.decision-mark[data-type=TimerScheduled] title",
            "titles => titles.map(t => t.textContent)",
        )
    assert len(marks) == 2
    assert DELAYED in marks[1] and "due +" in marks[1]
