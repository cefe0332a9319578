"""The job list in headless Chromium: the reason column, filters by phase, namespace and
queue that the server applies and the URL keeps (a view is shared by its link), and a long
list a page at a time."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from playwright.async_api import Page, Route, expect

from lavalog.events.codec import LogEvent
from lavalog.projections.service.live import LiveHub
from tests.projections.helpers import decided_examples, failing_job
from tests.projections.service.test_api import many_jobs
from tests.projections.service.test_browser import (
    ARTIFACTS,
    browser_page,
    chromium,
    click_held_across_a_refresh,
    loaded,
    publishing,
    serving,
)

__all__ = ["chromium"]  # the fixture

pytestmark = [pytest.mark.browser, pytest.mark.timeout(120)]

#: the list's request for a page of jobs
LIST = re.compile(r"/api/v1/jobs\?")


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[str]:
    """many_jobs (25 jobs: team-a, team-b, team-c; queues research and batch; Aborted but
    tf-mnist) and the decided examples (ml/ and hpc/, queue default)."""
    async with serving(loaded(tmp_path, many_jobs() + decided_examples())) as url:
        yield url


async def _keys(page: Page) -> list[str]:
    return sorted(
        await page.eval_on_selector_all("tr.job-row", "rows => rows.map(r => r.dataset.key)")
    )


async def test_the_filters_narrow_the_list_on_the_server_and_live_in_the_url(
    chromium: Path, served: str
) -> None:
    async with browser_page(chromium) as page:
        await page.goto(served)
        await expect(page.locator("tr.job-row")).to_have_count(29)
        # the reason column: the why of each job, short
        flaky = page.locator("tr.job-row[data-key='ml/flaky-train'] td.reason")
        await expect(flaky).to_have_text("RetriesExhausted")
        await expect(page.locator("tr.job-row[data-key='team-a/job-00'] td.reason")).to_have_text(
            "PodFailed"
        )

        # each control is found by its label: the way a screen reader announces it
        await expect(page.get_by_label("Aborted")).not_to_be_checked()
        await expect(page.locator("label[for='phase-Aborted']")).to_contain_text("24")
        await page.get_by_label("Aborted").check()
        await expect(page.locator("tr.job-row")).to_have_count(24)
        assert {p for p in await page.eval_on_selector_all(
            "tr.job-row", "rows => rows.map(r => r.dataset.phase)")} == {"Aborted"}  # fmt: skip
        await page.get_by_label("Namespace").select_option("team-b")
        await expect(page.locator("tr.job-row")).to_have_count(8)
        await page.get_by_label("Queue").select_option("batch")
        # team-b holds job-01, -04, ... -22; the odd ones are in batch
        await expect(page.locator("tr.job-row")).to_have_count(4)
        assert await _keys(page) == [
            "team-b/job-01",
            "team-b/job-07",
            "team-b/job-13",
            "team-b/job-19",
        ]
        await expect(page.locator("#jobs-shown")).to_have_text("1\N{EN DASH}4 of 4 jobs")
        shared = page.url
        assert re.search(r"#/\?namespace=team-b&queue=batch&phase=Aborted$", shared), shared
        ARTIFACTS.mkdir(exist_ok=True)
        await page.screenshot(
            path=str(ARTIFACTS / "projections-job-list-filters.png"), full_page=True
        )

        # the link opens the same view, its controls set as they were
        await page.goto("about:blank")
        await page.goto(shared)
        await expect(page.locator("tr.job-row")).to_have_count(4)
        await expect(page.get_by_label("Namespace")).to_have_value("team-b")
        await expect(page.get_by_label("Queue")).to_have_value("batch")
        await expect(page.get_by_label("Aborted")).to_be_checked()

        # several phases, then a search within them, from the keyboard
        await page.get_by_role("button", name="clear filters").click()
        await expect(page.locator("tr.job-row")).to_have_count(29)
        assert page.url.endswith("#/")
        await page.get_by_label("Failed").focus()
        await page.keyboard.press("Space")
        await page.get_by_label("Completed").check()
        await expect(page.locator("tr.job-row")).to_have_count(5)
        await page.get_by_label("Search").fill("ml/")
        await expect(page.locator("tr.job-row")).to_have_count(3)
        assert await _keys(page) == ["ml/batch-eval", "ml/flaky-train", "ml/tf-dist"]
        # the URL follows the typing 0.2 s after the last key; a render meanwhile (the live
        # stream's) may already show the search's rows
        await expect(page).to_have_url(re.compile(r"#/\?phase=Completed%2CFailed&q=ml%2F$"))


def _big_jobs(count: int) -> list[LogEvent]:
    """The logs of `count` jobs big/job-000... of namespace big, one a second."""
    return [
        event
        for n in range(count)
        for event in failing_job(key=f"big/job-{n:03}", uid=f"u-{n:03}", start=1_000.0 + n).log
    ]


async def test_a_long_list_is_shown_a_page_at_a_time(chromium: Path, tmp_path: Path) -> None:
    """However many jobs there are, the page holds one page of them (100 rows), counted and
    paged by the server, filters included."""
    store = loaded(tmp_path, [*_big_jobs(250), *many_jobs()])
    async with serving(store) as url, browser_page(chromium) as page:
        await page.goto(url + "#/?namespace=big")
        await expect(page.locator("#jobs-shown")).to_have_text("1\N{EN DASH}100 of 250 jobs")
        assert await page.locator("tr.job-row").count() == 100
        first = await page.locator("tr.job-row").first.get_attribute("data-key")
        assert first == "big/job-249"  # newest first
        await page.get_by_role("button", name="next page").click()
        await expect(page.locator("#jobs-shown")).to_have_text("101\N{EN DASH}200 of 250 jobs")
        await expect(page.locator("tr.job-row").first).to_have_attribute("data-key", "big/job-149")
        await page.get_by_role("button", name="next page").click()
        await expect(page.locator("#jobs-shown")).to_have_text("201\N{EN DASH}250 of 250 jobs")
        await expect(page.locator("tr.job-row")).to_have_count(50)
        await expect(page.get_by_role("button", name="next page")).to_have_count(0)
        ARTIFACTS.mkdir(exist_ok=True)
        await page.screenshot(path=str(ARTIFACTS / "projections-job-list-pages.png"))
        await page.get_by_role("button", name="first page").click()
        await expect(page.locator("#jobs-shown")).to_have_text("1\N{EN DASH}100 of 250 jobs")


async def test_a_first_page_that_arrives_late_does_not_land_under_the_next_pages_count(
    chromium: Path, tmp_path: Path
) -> None:
    """The live stream's refresh of the first page is still on its way when the next page
    is asked for, and arrives after it: the list keeps showing the page asked last."""
    store = loaded(tmp_path, _big_jobs(150))
    first_pages = 0
    held: asyncio.Future[Route] = asyncio.get_running_loop().create_future()

    async def hold_the_second_first_page(route: Route) -> None:
        nonlocal first_pages
        if "after=" in route.request.url:
            await route.continue_()
            return
        first_pages += 1
        if first_pages == 2:  # the live stream's refresh, after the page's own
            held.set_result(route)
        else:
            await route.continue_()

    async with serving(store) as url, browser_page(chromium) as page:
        await page.route(re.compile(r"/api/v1/jobs\?"), hold_the_second_first_page)
        await page.goto(url + "#/?namespace=big")
        await expect(page.locator("#jobs-shown")).to_have_text("1\N{EN DASH}100 of 150 jobs")
        late = await asyncio.wait_for(held, timeout=30)
        await page.get_by_role("button", name="next page").click()
        await expect(page.locator("#jobs-shown")).to_have_text("101\N{EN DASH}150 of 150 jobs")

        async with page.expect_response(lambda r: r.request == late.request) as arrived:
            await late.continue_()
        await (await arrived.value).finished()
        # the response's continuation (parse, render) runs within a frame of its arrival
        await page.evaluate(
            "() => new Promise((done) => requestAnimationFrame(() => setTimeout(done)))"
        )

        await expect(page.locator("#jobs-shown")).to_have_text("101\N{EN DASH}150 of 150 jobs")
        assert await page.locator("tr.job-row").first.get_attribute("data-key") == "big/job-049"
        assert await page.locator("tr.job-row").count() == 50


async def test_a_click_held_across_a_live_refresh_still_turns_the_page(
    chromium: Path, tmp_path: Path
) -> None:
    """A refresh from the live stream lands between the press on "next page" and its
    release (on a busy cluster the list is drawn again every half second): the click still
    counts, since the pager's buttons stay the same elements."""
    store = loaded(tmp_path, _big_jobs(150))
    hub = LiveHub()
    async with serving(store, hub) as url, browser_page(chromium) as page:
        await page.goto(url + "#/?namespace=big")
        await expect(page.locator("#jobs-shown")).to_have_text("1\N{EN DASH}100 of 150 jobs")
        next_page = page.get_by_role("button", name="next page")
        late = failing_job(key="big/job-late", uid="u-late", start=5_000.0).log
        await click_held_across_a_refresh(
            page, next_page, LIST, publishing(store, hub, late, tmp_path / "late.jsonl")
        )
        await expect(page.locator("#jobs-shown")).to_have_text("101\N{EN DASH}151 of 151 jobs")


async def test_a_click_held_on_a_job_across_a_live_refresh_still_opens_it(
    chromium: Path, tmp_path: Path
) -> None:
    """A refresh that leaves the page's jobs as they were (another namespace's job moved)
    lands between the press on a job's link and its release: the row is the same element,
    so the click opens the job."""
    store = loaded(tmp_path, _big_jobs(3))
    hub = LiveHub()
    async with serving(store, hub) as url, browser_page(chromium) as page:
        await page.goto(url + "#/?namespace=big")
        await expect(page.locator("#jobs-shown")).to_have_text("1\N{EN DASH}3 of 3 jobs")
        job = page.get_by_role("link", name="big/job-001")
        elsewhere = failing_job(key="other/job", uid="u-other", start=5_000.0).log
        await click_held_across_a_refresh(
            page, job, LIST, publishing(store, hub, elsewhere, tmp_path / "elsewhere.jsonl")
        )
        await expect(page).to_have_url(re.compile(r"#/jobs/big/job-001$"))
