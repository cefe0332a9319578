"""The job page says what happened, in headless Chromium: the job's one-line why, and the
pod failures and disruptions with each container's end and its last words."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from playwright.async_api import expect

from lavalog.projections.service.sources.file import read_file
from lavalog.projections.service.store.writer import Store, load
from tests.projections.helpers import decided_examples, sidecar_job, write_events
from tests.projections.service.test_browser import (
    ARTIFACTS,
    browser_page,
    chromium,
    click_held_across_a_refresh,
    serving,
    tf_mnist_until_its_failure,
)

__all__ = ["chromium"]  # the fixture

pytestmark = [pytest.mark.browser, pytest.mark.timeout(120)]


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[str]:
    store = Store(tmp_path / "s.sqlite")
    load(store, read_file(write_events(tmp_path / "log.jsonl", sidecar_job())))
    async with serving(store) as url:
        yield url


async def test_the_job_page_shows_the_why_and_the_last_words(chromium: Path, served: str) -> None:
    async with browser_page(chromium) as page:
        await page.goto(served + "#/jobs/default/sidecar")
        await page.wait_for_selector("#why")
        why = await page.inner_text("#why")
        rows = await page.eval_on_selector_all(
            "#pod-ends tr.pod-end", "rows => rows.map(r => r.innerText)"
        )
        words = await page.inner_text("#pod-ends pre.last-words")
        ARTIFACTS.mkdir(exist_ok=True)
        await page.screenshot(path=str(ARTIFACTS / "projections-what-happened.png"), full_page=True)

    assert why == (
        "RestartJob: PodFailed of pod sidecar-train-0, container trainer (exit code 137,"
        " OOMKilled) on n2, matched job policy #0; 1 retry left (retryCount 1, maxRetry 3)"
    )
    assert len(rows) == 2
    assert "evicted" in rows[0] and "PreemptionByScheduler" in rows[0]
    assert "agent exit 0 Completed, trainer exit 137 OOMKilled" in rows[1]
    assert words.splitlines()[-1] == "CUDA out of memory"


@pytest.fixture
async def examples(tmp_path: Path) -> AsyncIterator[str]:
    """The recorded examples, decided: ml/tf-dist restarts a task and completes, ml/flaky-train
    fails for good."""
    store = Store(tmp_path / "s.sqlite")
    load(store, read_file(write_events(tmp_path / "log.jsonl", decided_examples())))
    async with serving(store) as url:
        yield url


async def test_bars_say_where_and_how_and_the_events_share_the_time_axis(
    chromium: Path, examples: str
) -> None:
    async with browser_page(chromium) as page:
        await page.goto(examples + "#/jobs/ml/tf-dist")
        await page.wait_for_selector("#gantt g.kube-event")
        bars = await page.eval_on_selector_all(
            "#gantt rect.attempt",
            "bars => bars.map(b => [b.dataset.outcome, b.dataset.node, b.dataset.exitCode])",
        )
        assert bars[3] == ["failed", "node-0", "1"]
        labels = await page.eval_on_selector_all(
            "#gantt text.bar-label", "ts => ts.map(t => t.textContent)"
        )
        assert "node-0 · exit 1 Error" in labels  # the failed worker's bar
        assert labels.count("node-0") >= 3  # the others: where they ran

        # every Event of the job, once on the axis and once in the table
        rows = await page.eval_on_selector_all(
            "#kube-events tr.kube-event-row", "rows => rows.map(r => r.dataset.reason)"
        )
        assert rows == [
            "Pending", "Running", "ExecuteAction", "Restarting", "Pending", "Running",
            "ExecuteAction", "Completing", "Completed",
        ]  # fmt: skip
        # phase changes reach Kubernetes only with --phase-events: told apart, and said why
        opt_in = await page.eval_on_selector_all(
            "#kube-events tr.opt-in", "rows => rows.map(r => r.dataset.reason)"
        )
        assert [r for r in rows if r not in opt_in] == ["ExecuteAction", "ExecuteAction"]
        assert "--phase-events" in (await page.text_content("#opt-in-note") or "")
        counts = await page.eval_on_selector_all(
            "#gantt g.kube-event", "gs => gs.map(g => Number(g.dataset.count))"
        )
        assert sum(counts) == len(rows)
        # on the same clock as the decisions: the RestartTask's Events sit on its line
        restart_x = await page.get_attribute("#gantt g.decision-mark line", "x1")
        marker = page.locator("#gantt g.kube-event[data-reasons='ExecuteAction,Restarting']")
        assert await marker.locator("circle").get_attribute("cx") == restart_x

        await marker.click()
        picked = page.locator("#kube-events tr.picked")
        await expect(picked).to_have_count(2)
        assert await picked.evaluate_all("rs => rs.map(r => r.dataset.reason)") == [
            "ExecuteAction",
            "Restarting",
        ]
        # from the keyboard: each marker is a tab stop, Enter picks its Events and the
        # detail shows, inside the window even at its right edge
        await page.evaluate("scrollTo(0, 0)")
        last = page.locator("#gantt g.kube-event").last
        await last.focus()
        await page.wait_for_selector("#tip:not([hidden])")
        assert "Completing -> Completed" in (await page.text_content("#tip") or "")
        box = await page.locator("#tip").bounding_box()
        assert box is not None and box["x"] >= 0
        assert box["x"] + box["width"] <= await page.evaluate("innerWidth")
        await page.keyboard.press("Enter")
        await expect(picked).to_have_count(1)
        await expect(picked).to_have_attribute("data-reason", "Completed")
        ARTIFACTS.mkdir(exist_ok=True)
        await page.screenshot(
            path=str(ARTIFACTS / "projections-timeline-events.png"), full_page=True
        )

        # the spec the job ran with, as YAML
        await page.get_by_text("Spec (YAML)").click()
        await expect(page.locator("#spec-yaml")).to_contain_text("kind: Job")
        spec = await page.text_content("#spec-yaml") or ""
        assert "name: tf-dist" in spec and "namespace: ml" in spec and "policies:" in spec
        await page.locator("#spec").screenshot(path=str(ARTIFACTS / "projections-spec.png"))

        # a job that failed for good has a Warning, drawn apart from the Normal ones
        await page.goto(examples + "#/jobs/ml/flaky-train")
        await page.wait_for_selector("h2:has-text('ml/flaky-train')")
        warning = page.locator("#gantt g.kube-event.warning")
        await expect(warning).to_have_count(1)
        assert "Failed" in (await warning.get_attribute("data-reasons") or "").split(",")
        await expect(page.locator("#kube-events tr.warning")).to_have_count(1)


async def test_a_chart_items_detail_stays_while_the_browser_scrolls_it_into_view(
    chromium: Path, examples: str
) -> None:
    """Tabbing to an Event marker below the fold scrolls the page to it: its detail moves
    with it, not away (a scroll hides only a pointer's tooltip)."""
    async with browser_page(chromium, height=260) as page:
        await page.goto(examples + "#/jobs/ml/tf-dist")
        await page.wait_for_selector("#gantt g.kube-event")
        last = page.locator("#gantt g.kube-event").last
        assert await page.evaluate("scrollY") == 0
        await last.focus()
        # the scroll the focus caused has been dispatched once two frames went by
        await page.evaluate(
            "new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))"
        )
        assert await page.evaluate("scrollY") > 0
        assert await page.is_visible("#tip")
        assert "Completing -> Completed" in (await page.text_content("#tip") or "")
        tip, marker = await page.locator("#tip").bounding_box(), await last.bounding_box()
        assert tip is not None and marker is not None
        assert 0 <= tip["y"] <= await page.evaluate("innerHeight")
        assert abs(tip["y"] - (marker["y"] + marker["height"])) <= 20 + tip["height"]


async def test_a_click_held_on_an_event_marker_across_a_live_refresh_still_picks_it(
    chromium: Path, tmp_path: Path
) -> None:
    """A running job's chart is drawn again on each of its events; one lands between the
    press on an Event's marker and its release: the chart waits for the click, which picks
    the marker's rows of the Events table."""
    store, hub, the_failure = tf_mnist_until_its_failure(tmp_path)
    async with serving(store, hub) as url, browser_page(chromium) as page:
        await page.goto(url + "#/jobs/team-a/tf-mnist")
        marker = page.locator("#gantt g.kube-event").first
        await expect(marker).to_be_visible()
        job = re.compile(r"/api/v1/jobs/team-a/tf-mnist$")
        await click_held_across_a_refresh(page, marker, job, the_failure)
        await expect(page.locator("#kube-events tr.picked")).not_to_have_count(0)
