"""The what-if over HTTP and in the web UI (headless Chromium, as tests/projections does)."""

from __future__ import annotations

import re

import aiohttp
import pytest
from playwright.async_api import expect

from tests.projections.service.test_browser import browser_page, chromium, served

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
