"""The web UI for everyone, in headless Chromium: every control has a name a screen reader
reads, and text keeps a contrast of 4.5:1 (WCAG AA for normal text) on every colour it is
drawn on: phase badges, the labels on the chart's bars and bands."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.projections.service.test_browser import browser_page, chromium
from tests.projections.service.test_what_happened_web import examples

__all__ = ["chromium", "examples"]  # the fixtures

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
    // a label of class `labelClass` drawn on a shape of class `shapeClass`
    const onShape = (shapeClass, labelClass) => {
        const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
        const shape = document.createElementNS("http://www.w3.org/2000/svg", "rect");
        shape.setAttribute("class", shapeClass);
        const label = document.createElementNS("http://www.w3.org/2000/svg", "text");
        label.setAttribute("class", labelClass);
        svg.append(shape, label);
        document.body.append(svg);
        return contrast(getComputedStyle(label).fill, getComputedStyle(shape).fill);
    };
    for (const phase of phases) {
        const badge = document.createElement("span");
        badge.className = `badge phase-${phase}`;
        badge.textContent = phase;
        document.body.append(badge);
        const style = getComputedStyle(badge);
        out.push([`badge ${phase}`, contrast(style.color, style.backgroundColor)]);
        out.push([`band ${phase}`, onShape(`band phase-${phase}`, "band-label")]);
    }
    for (const outcome of outcomes) {
        out.push([`bar ${outcome}`, onShape(`attempt outcome-${outcome}`, "bar-label")]);
    }
    const muted = document.querySelector(".muted") || document.body;
    out.push(["muted text", contrast(getComputedStyle(muted).color, getComputedStyle(document.body).backgroundColor)]);
    return out;
}"""

#: the form controls of the page that have no accessible name
UNNAMED = """() => [...document.querySelectorAll("#view input, #view select, #view textarea, #view button")]
    .filter((c) => !(c.labels && c.labels.length) && !c.getAttribute("aria-label") && !c.textContent.trim())
    .map((c) => c.outerHTML.slice(0, 80))"""


async def test_text_keeps_its_contrast_on_every_colour(chromium: Path, examples: str) -> None:
    async with browser_page(chromium) as page:
        await page.goto(examples + "#/jobs/ml/tf-dist")
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
async def test_every_control_has_a_name(
    chromium: Path, examples: str, path: str, ready: str
) -> None:
    async with browser_page(chromium) as page:
        await page.goto(examples + path)
        await page.wait_for_selector(ready)
        if path.endswith("tf-dist"):
            await page.get_by_text("Spec (YAML)").click()
            await page.wait_for_selector("#spec-yaml:not(:empty)")
        assert await page.evaluate(UNNAMED) == []
