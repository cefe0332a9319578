"""The web UI in headless Chromium (Debian's package, driven by Playwright): rows, bars, live.

The browser is `/usr/bin/chromium`; when it is missing the test installs it with apt-get
(as root) and skips, saying why, only if that fails. Screenshots go to tests/artifacts/.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from playwright.async_api import Locator, Page, expect

from lavalog.controller.auth.middleware import Authenticator
from lavalog.events.codec import LogEvent
from lavalog.events.observations import Observation
from lavalog.projections.core.feed import Sourced
from lavalog.projections.service.app import create_app, url_of
from lavalog.projections.service.live import LiveHub
from lavalog.projections.service.sources.file import read_file
from lavalog.projections.service.store.queries import Queries
from lavalog.projections.service.store.writer import Store, load
from tests.projections.helpers import decided_examples, tf_job, write_events
from tests.projections.service.test_api import Status

pytestmark = [pytest.mark.browser, pytest.mark.timeout(120)]

CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = Path(__file__).resolve().parents[2] / "artifacts"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


#: held by the test process installing Chromium: pytest-xdist's other workers wait for
#: it, then find it installed, instead of failing on apt's own lock and skipping
INSTALL_LOCK = Path(tempfile.gettempdir()) / "lavalog-tests-chromium.lock"


@pytest.fixture(scope="session")
def chromium() -> Path:
    if CHROMIUM.exists():
        return CHROMIUM
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        pytest.skip(f"{CHROMIUM} is missing and apt-get cannot install it here (not root)")
    with INSTALL_LOCK.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not CHROMIUM.exists():
            _install_chromium()
    return CHROMIUM


def _install_chromium() -> None:
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    # another apt on the machine (not a test's) is waited for, not taken for a failure
    wait = ["-o", "DPkg::Lock::Timeout=300"]
    for command in (["apt-get", *wait, "update"], ["apt-get", *wait, "install", "-y", "chromium"]):
        result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
        if result.returncode != 0:
            pytest.skip(f"cannot install chromium: {' '.join(command)}: {result.stderr[-500:]}")


@asynccontextmanager
async def browser_page(
    chromium: Path, *, width: int = 1280, height: int = 800
) -> AsyncIterator[Any]:
    """A page of a headless Chromium (1280x800 unless asked), closed on exit. The server's
    Content-Security-Policy is in force: anything it refuses fails the test."""
    from playwright.async_api import async_playwright

    refused: list[str] = []
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path=str(chromium), args=CHROMIUM_ARGS
        )
        try:
            page = await browser.new_page(viewport={"width": width, "height": height})
            page.on(
                "console",
                lambda message: (
                    refused.append(message.text)
                    if "Content Security Policy" in message.text
                    else None
                ),
            )
            yield page
        finally:
            await browser.close()
    assert refused == []


@asynccontextmanager
async def serving(
    store: Store, hub: LiveHub | None = None, authenticator: Authenticator | None = None
) -> AsyncIterator[str]:
    """The API and UI over `store` on a free port of 127.0.0.1, their URL."""
    queries = Queries(store.location)
    app = create_app(
        queries=queries, hub=hub or LiveHub(), status=Status(), authenticator=authenticator
    )
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield url_of(runner, "127.0.0.1")
    finally:
        await runner.cleanup()
        queries.close()


def loaded(tmp_path: Path, events: list[LogEvent]) -> Store:
    """A store in `tmp_path` holding `events`, read from a log file as `lavalog projections
    rebuild` reads one."""
    store = Store(tmp_path / "s.sqlite")
    load(store, read_file(write_events(tmp_path / "log.jsonl", events)))
    return store


def tf_mnist_until_its_failure(tmp_path: Path) -> tuple[Store, LiveHub, Callable[[], None]]:
    """tf-mnist stored until its worker 1 fails (the job Running), its hub, and a call that
    stores and streams the failure."""
    story = tf_job(start=1_000.0).log
    failure = next(i for i, e in enumerate(story) if e.time >= 1_040.0)
    store, hub = loaded(tmp_path, story[:failure]), LiveHub()
    return store, hub, publishing(store, hub, story[failure : failure + 1], tmp_path / "f.jsonl")


def publishing(store: Store, hub: LiveHub, events: list[LogEvent], log: Path) -> Callable[[], None]:
    """A call that stores and streams `events` (written to `log` first), as the runner does."""
    return lambda: hub.publish(store.apply(list(read_file(write_events(log, events)))))


async def click_held_across_a_refresh(
    page: Page, target: Locator, refreshed: re.Pattern[str], publish: Callable[[], None]
) -> None:
    """Press the mouse on `target`; `publish` live events and wait until the page has been
    drawn again from the answer to the request (`refreshed`, its URL) they cause; then
    release it. The page refreshes half a second after an event, and a press held that
    long straddles it, as a user's click on a busy cluster's page can."""
    await target.scroll_into_view_if_needed()
    box = await target.bounding_box()
    assert box is not None
    await page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    await page.mouse.down()
    async with page.expect_response(refreshed) as answer:
        publish()
    await (await answer.value).finished()
    # the response's continuation (parse, render) runs within a frame of its arrival
    await page.evaluate(
        "() => new Promise((done) => requestAnimationFrame(() => setTimeout(done)))"
    )
    await page.mouse.up()


@pytest.fixture
async def served(tmp_path) -> AsyncIterator[tuple[str, Store, LiveHub, list[Sourced]]]:
    """The recorded examples and the first 40 s of tf-mnist, served on a free port; the rest
    of tf-mnist is returned for the test to feed live."""
    story = tf_job(start=1_767_225_600.0).log
    split = next(i for i, e in enumerate(story) if e.time >= 1_767_225_640.0)
    store, hub = loaded(tmp_path, decided_examples() + story[:split]), LiveHub()
    rest = list(read_file(write_events(tmp_path / "rest.jsonl", story[split:])))
    async with serving(store, hub) as url:
        yield url, store, hub, rest


async def test_job_list_and_gantt_render_and_follow_the_stream(chromium, served):
    url, store, hub, rest = served
    ARTIFACTS.mkdir(exist_ok=True)
    async with browser_page(chromium) as page:
        await page.goto(url)
        await page.wait_for_selector("tr.job-row")
        rows = await page.eval_on_selector_all(
            "tr.job-row", "rows => rows.map(r => [r.dataset.key, r.dataset.phase])"
        )
        assert sorted(rows) == [
            ["hpc/mpi-allreduce", "Completed"],
            ["ml/batch-eval", "Completed"],
            ["ml/flaky-train", "Failed"],
            ["ml/tf-dist", "Completed"],
            ["team-a/tf-mnist", "Running"],
        ]
        await page.fill("input[type=search]", "ml/")
        # (expect, not wait_for_function: that evaluates a string, which the UI's
        # Content-Security-Policy forbids)
        await expect(page.locator("tr.job-row")).to_have_count(3)
        await page.screenshot(path=str(ARTIFACTS / "projections-jobs.png"), full_page=True)

        await page.goto(url + "#/jobs/ml/tf-dist")
        await page.wait_for_selector("#gantt rect.attempt")
        gantt = await page.eval_on_selector(
            "#gantt",
            """g => ({
                rows: [...g.querySelectorAll('g.gantt-row')].map(r => r.dataset.task + '-' + r.dataset.index),
                bars: [...g.querySelectorAll('rect.attempt')].map(b => b.dataset.outcome),
                phases: [...g.querySelectorAll('.phase-band rect')].map(b => b.dataset.phase),
                marks: [...g.querySelectorAll('g.decision-mark title')].map(t => t.textContent),
                labels: [...g.querySelectorAll('g.decision-mark text')].map(t => t.textContent),
                groups: [...g.querySelectorAll('.podgroup-band rect')].map(b => b.dataset.phase),
                ticks: [...g.querySelectorAll('.axis text')].map(t => t.textContent),
            })""",
        )
        assert gantt["rows"] == ["ps-0", "worker-0", "worker-1"]
        assert gantt["bars"] == ["killed", "killed", "succeeded", "failed", "succeeded"]
        assert gantt["phases"] == [
            "Pending",
            "Running",
            "Restarting",
            "Pending",
            "Running",
            "Completing",
            "Completed",
        ]
        assert len(gantt["marks"]) == 2
        assert "RestartTask, on PodFailed, policy task:worker#0, exit code 1" in gantt["marks"][0]
        assert gantt["labels"] == ["RestartTask", "CompleteJob"]
        assert gantt["groups"] and gantt["groups"][0] == "Inqueue"
        assert gantt["ticks"][:4] == ["+0s", "+30s", "+1m", "+1m30s"]  # round steps, not fifths
        legend = await page.locator(".legend").text_content() or ""
        assert "job phases" in legend and "Restarting" in legend and "decision" in legend
        # a decision is found by hovering anywhere on its line, not only its 10 px triangle
        box = await page.locator("#gantt g.decision-mark line.hit").first.bounding_box()
        assert box is not None
        await page.mouse.move(box["x"] + box["width"] / 2, box["y"] + 40)
        await page.wait_for_selector("#tip:not([hidden])")
        assert "RestartTask" in (await page.locator("#tip").text_content() or "")
        await page.screenshot(path=str(ARTIFACTS / "projections-tf-dist.png"), full_page=True)

        await page.goto(url + "#/jobs/team-a/tf-mnist")
        # a hash change keeps the page: wait for this job's view, not the last job's gantt
        await page.wait_for_selector("h2:has-text('team-a/tf-mnist')")
        await page.wait_for_selector("#gantt rect.attempt")
        assert await page.locator("#gantt rect.attempt").count() == 3
        await expect(page.locator("#live")).to_have_class(re.compile(r"\bon\b"))
        hub.publish(store.apply(rest))  # the rest of the job arrives while the page is open
        await expect(page.locator("#gantt rect.attempt")).to_have_count(5, timeout=10_000)
        outcomes = await page.eval_on_selector_all(
            "#gantt rect.attempt", "bars => bars.map(b => b.dataset.outcome)"
        )
        assert outcomes == ["killed", "killed", "succeeded", "failed", "succeeded"]
        assert await page.locator("h2 .badge").text_content() == "Completed"
        await page.screenshot(path=str(ARTIFACTS / "projections-live.png"), full_page=True)
    assert not any(
        isinstance(item.event, Observation) and item.event.key != "team-a/tf-mnist" for item in rest
    )


async def test_a_job_page_opened_before_its_events_shows_the_job_when_they_arrive(
    chromium: Path, tmp_path: Path
) -> None:
    """A link to a job followed before the projections have stored it (it was just
    submitted): the page says so, and shows the job as its events arrive."""
    store = Store(tmp_path / "s.sqlite")
    load(store, read_file(write_events(tmp_path / "log.jsonl", decided_examples())))
    story = list(
        read_file(write_events(tmp_path / "story.jsonl", tf_job(start=1_767_225_600.0).log))
    )
    hub = LiveHub()
    async with serving(store, hub) as url, browser_page(chromium) as page:
        await page.goto(url + "#/jobs/team-a/tf-mnist")
        await expect(page.locator("#no-job")).to_contain_text("No job team-a/tf-mnist")
        await expect(page.locator("#live")).to_have_class(re.compile(r"\bon\b"))
        hub.publish(store.apply(story))
        await expect(page.locator("h2 .badge")).to_have_text("Completed", timeout=10_000)
        await expect(page.locator("#gantt rect.attempt")).to_have_count(5)
        await expect(page.locator("#no-job")).to_have_count(0)
