"""The what-if over HTTP and in the web UI (headless Chromium, as tests/projections does)."""

from __future__ import annotations

import re

import aiohttp
import pytest
from playwright.async_api import expect

from tests.projections.service.test_browser import ARTIFACTS, browser_page, chromium, served

__all__ = ["chromium", "served"]  # fixtures shared with the UI's own browser test


@pytest.mark.timeout(120)
async def test_the_api_replays_a_job_under_more_retries(served) -> None:
    url, *_ = served
    async with aiohttp.ClientSession() as session:
        async with session.post(
            f"{url.rstrip('/')}/api/v1/jobs/ml/flaky-train/whatif",
            json={"set": ["spec.maxRetry=5"]},
        ) as response:
            report = await response.json()
            assert response.status == 200, report
        assert report["baseline"] == "recorded"  # the served log holds the decisions
        assert report["divergence"] == "ml/flaky-train@13"
        async with session.post(
            f"{url.rstrip('/')}/api/v1/jobs/ml/flaky-train/whatif", json={"set": ["maxRetry=5"]}
        ) as response:
            assert response.status == 400
            assert "expected spec.FIELD=VALUE" in (await response.json())["error"]
        async with session.post(
            f"{url.rstrip('/')}/api/v1/jobs/ml/nothing/whatif", json={"set": ["spec.maxRetry=5"]}
        ) as response:
            assert response.status == 404


@pytest.mark.browser
@pytest.mark.timeout(120)
async def test_the_what_if_page_edits_the_policy_and_shows_the_divergence(chromium, served) -> None:
    url, *_ = served
    async with browser_page(chromium) as page:
        await page.goto(url + "#/jobs/ml/flaky-train")
        await page.click("#whatif-link")
        await page.wait_for_selector("#whatif-verdict")
        verdict = await page.text_content("#whatif-verdict") or ""
        assert verdict.startswith("Diverges at ml/flaky-train@13")
        assert "Restarting" in verdict and "unknown beyond" in verdict
        marked = await page.text_content("#whatif-steps tr.divergence") or ""
        assert "PodGroupDelete" in marked  # recorded: the job ends; the alternative does not
        await page.fill("#whatif-set", "spec.maxRetry=2")
        await page.click("#whatif-run")
        await expect(page.locator("#whatif-verdict")).to_have_text(re.compile("^Identical"))


#: what a page must not do at a laptop's size: scroll sideways, put anything past the
#: window's right edge, or clip what an element holds (a box narrower than its content
#: that hides the rest: overflow hidden, or a scroll bar of its own)
OVERFLOWS = """() => {
    const width = document.documentElement.clientWidth;
    const out = [];
    if (document.documentElement.scrollWidth > width) out.push(`page ${document.documentElement.scrollWidth} > ${width}`);
    for (const node of document.querySelectorAll("#view *")) {
        const box = node.getBoundingClientRect();
        if (box.width && box.right > width + 0.5) out.push(`${node.tagName}#${node.id} right ${box.right}`);
        const style = getComputedStyle(node);
        if (style.overflowX !== "visible" && node.scrollWidth > node.clientWidth + 1) {
            out.push(`${node.tagName}#${node.id} clips ${node.scrollWidth} > ${node.clientWidth}`);
        }
    }
    return out;
}"""


@pytest.mark.browser
@pytest.mark.timeout(120)
@pytest.mark.parametrize(("width", "height"), [(1366, 768), (1440, 900)])
async def test_the_what_if_page_fits_a_laptop_screen(chromium, served, width, height) -> None:
    """The page at 1366x768 and 1440x900, a diverging replay on it (its table of facts and
    decisions, the whys of both runs) and the longest kind of change typed in: no
    sideways scrolling, nothing cut off."""
    url, *_ = served
    policy = 'spec.tasks[worker].policies=[{"event":"PodFailed","action":"RestartTask"}]'
    async with browser_page(chromium, width=width, height=height) as page:
        await page.goto(url + "#/jobs/ml/flaky-train/whatif")
        await page.wait_for_selector("#whatif-verdict")
        await page.fill("#whatif-set", f"spec.maxRetry=5\n{policy}")
        await page.click("#whatif-run")
        await expect(page.locator("#whatif-why li")).to_have_count(2)
        assert await page.evaluate(OVERFLOWS) == []
        ARTIFACTS.mkdir(exist_ok=True)
        await page.screenshot(
            path=str(ARTIFACTS / f"projections-whatif-{width}x{height}.png"), full_page=True
        )
