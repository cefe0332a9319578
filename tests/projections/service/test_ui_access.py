"""The web UI for everyone, in headless Chromium: every control has a name a screen reader
reads, and text keeps a contrast of 4.5:1 (WCAG AA for normal text) on every colour it is
drawn on: phase badges, the labels on the chart's bars and bands."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from lavalog.projections.service.sources.file import read_file
from lavalog.projections.service.store.writer import Store, load
from tests.projections.helpers import decided_examples, write_events
from tests.projections.service.test_browser import browser_page, chromium, serving

__all__ = ["chromium"]  # the fixture

pytestmark = [pytest.mark.browser, pytest.mark.timeout(120)]

PHASES = [
    "Pending", "Running", "Restarting", "Completing", "Completed", "Aborting", "Aborted",
    "Terminating", "Terminated", "Failed", "Inqueue", "Unknown",
]  # fmt: skip
OUTCOMES = ["pending", "running", "succeeded", "failed", "evicted", "killed"]

#: WCAG's contrast ratio of two CSS colours, in the page (so it reads computed styles)
CONTRAST = """() => {
  window.contrast = (a, b) => {
    const channels = (css) => css.match(/[\\d.]+/g).slice(0, 3).map(Number);
    const lum = (css) => {
        const [r, g, b] = channels(css).map((c) => {
            c /= 255;
            return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
        });
        return 0.2126 * r + 0.7152 * g + 0.0722 * b;
    };
    const [hi, lo] = [lum(a), lum(b)].sort((x, y) => y - x);
    return (hi + 0.05) / (lo + 0.05);
  };
}"""

#: the text and background colour of a badge of each phase, and of a bar label on a bar of
#: each outcome (made in the page with the UI's own classes)
SAMPLES = """([phases, outcomes]) => {
    const out = [];
    for (const phase of phases) {
        const badge = document.createElement("span");
        badge.className = `badge phase-${phase}`;
        badge.textContent = phase;
        document.body.append(badge);
        const style = getComputedStyle(badge);
        out.push([`badge ${phase}`, contrast(style.color, style.backgroundColor)]);
        const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
        const band = document.createElementNS("http://www.w3.org/2000/svg", "rect");
        band.setAttribute("class", `band phase-${phase}`);
        const label = document.createElementNS("http://www.w3.org/2000/svg", "text");
        label.setAttribute("class", "band-label");
        svg.append(band, label);
        document.body.append(svg);
        out.push([`band ${phase}`, contrast(getComputedStyle(label).fill, getComputedStyle(band).fill)]);
    }
    for (const outcome of outcomes) {
        const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
        const bar = document.createElementNS("http://www.w3.org/2000/svg", "rect");
        bar.setAttribute("class", `attempt outcome-${outcome}`);
        const label = document.createElementNS("http://www.w3.org/2000/svg", "text");
        label.setAttribute("class", "bar-label");
        svg.append(bar, label);
        document.body.append(svg);
        out.push([`bar ${outcome}`, contrast(getComputedStyle(label).fill, getComputedStyle(bar).fill)]);
    }
    const muted = document.querySelector(".muted") || document.body;
    out.push(["muted text", contrast(getComputedStyle(muted).color, getComputedStyle(document.body).backgroundColor)]);
    return out;
}"""

#: the form controls of the page that have no accessible name
UNNAMED = """() => [...document.querySelectorAll("#view input, #view select, #view textarea, #view button")]
    .filter((c) => !(c.labels && c.labels.length) && !c.getAttribute("aria-label") && !c.textContent.trim())
    .map((c) => c.outerHTML.slice(0, 80))"""


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[str]:
    store = Store(tmp_path / "s.sqlite")
    load(store, read_file(write_events(tmp_path / "log.jsonl", decided_examples())))
    async with serving(store) as url:
        yield url


async def test_text_keeps_its_contrast_on_every_colour(chromium: Path, served: str) -> None:
    async with browser_page(chromium) as page:
        await page.goto(served + "#/jobs/ml/tf-dist")
        await page.wait_for_selector("#gantt rect.attempt")
        await page.evaluate(CONTRAST)
        ratios = await page.evaluate(SAMPLES, [PHASES, OUTCOMES])
    low = [(what, round(ratio, 2)) for what, ratio in ratios if ratio < 4.5]
    assert low == []


@pytest.mark.parametrize(
    ("path", "ready"),
    [
        ("#/", "tr.job-row"),
        ("#/jobs/ml/tf-dist", "#gantt rect.attempt"),
        ("#/jobs/ml/flaky-train/whatif", "#whatif-verdict"),
    ],
)
async def test_every_control_has_a_name(chromium: Path, served: str, path: str, ready: str) -> None:
    async with browser_page(chromium) as page:
        await page.goto(served + path)
        await page.wait_for_selector(ready)
        if path.endswith("tf-dist"):
            await page.get_by_text("Spec (YAML)").click()
            await page.wait_for_selector("#spec-yaml:not(:empty)")
        assert await page.evaluate(UNNAMED) == []
