"""The job page says what happened, in headless Chromium: the job's one-line why, and the
pod failures and disruptions with each container's end and its last words."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from lavalog.projections.service.sources.file import read_file
from lavalog.projections.service.store.writer import Store, load
from tests.projections.helpers import sidecar_job, write_events
from tests.projections.service.test_browser import ARTIFACTS, browser_page, chromium, serving

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
