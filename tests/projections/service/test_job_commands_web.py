"""Suspend and resume from the job page, end to end in headless Chromium: the simulated
cluster, the controller and the projections (Kafka, `--kubernetes-auth`) running. A user
RBAC lets create Commands sees the buttons; a click creates the Command with their own
token, and the controller acts on it (suspend: Aborting, Aborted; resume: running again),
which the page follows live. A user who may only read sees no button, and a POST they
forge is refused; so is one forged from another site's page, though the browser sends the
sign-in cookie with it. A click held on a button while the live page is drawn again
still counts (the simulated cluster and the projections alone)."""

from __future__ import annotations

import asyncio
import re
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from aiohttp import web
from playwright.async_api import Page, expect

from lavalog.controller.auth.kubernetes import KubernetesAuth
from lavalog.controller.kafka import ensure_topics
from lavalog.controller.kube import connect
from lavalog.projections.service.app import serve
from lavalog.projections.service.sources.kafka import KafkaSource
from lavalog.projections.service.store.sqlite import SqliteLocation
from lavalog.projections.service.store.writer import Store
from lavalog.simulator import registry
from lavalog.simulator.access import Access
from lavalog.simulator.selectors import Selector
from lavalog.simulator.server import SimulatedCluster
from tests.e2e.conftest import NAMESPACE, System, make_kafka, running_system
from tests.e2e.jobs import FOREVER, job, task
from tests.projections.service.test_browser import (
    ARTIFACTS,
    browser_page,
    chromium,
    click_held_across_a_refresh,
    serving,
    tf_mnist_until_its_failure,
)
from tests.projections.service.test_job_commands import grant

__all__ = ["chromium"]  # the fixture

pytestmark = [pytest.mark.browser, pytest.mark.integration, pytest.mark.timeout(180)]

NAME = "train"
PAGE = f"#/jobs/{NAMESPACE}/{NAME}"


@dataclass
class Running:
    system: System
    url: str
    #: (user, verb, resource) of every request about Commands the API server was sent
    commands: list[tuple[str, str]] = field(default_factory=list)

    def stored_commands(self) -> int:
        store = self.system.cluster.objects.store
        return len(list(store.scan(registry.COMMAND, NAMESPACE, Selector())))


@pytest.fixture
async def running(kafka_broker: str, tmp_path: Path) -> AsyncIterator[Running]:
    """The whole system, a 2-worker job Running in it, and the projections serving it to
    callers with Kubernetes tokens (alice may command, bob may only read)."""
    kafka = make_kafka(kafka_broker)
    await ensure_topics(kafka)
    async with running_system(kafka) as system:
        grant(system.cluster, NAMESPACE)
        heard: list[tuple[str, str]] = []

        def on_request(access: Access) -> None:
            if access.resource == "commands" and access.verb == "create":
                heard.append((access.user, access.verb))

        system.cluster.on_request(on_request)
        location = SqliteLocation(tmp_path / "projections.sqlite")
        started: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        serving = asyncio.create_task(
            serve(
                location=location,
                open_store=lambda: Store(location),
                source=KafkaSource(kafka, group_id=f"projections-{uuid.uuid4().hex[:8]}"),
                host="127.0.0.1",
                port=0,
                authenticator=KubernetesAuth(system.kube),
                started=started.set_result,
            )
        )
        try:
            url = await asyncio.wait_for(started, 30)
            await system.submit(job(NAME, task("worker", 2, FOREVER)))
            await system.until_phase(NAME, ["Running"], 60)
            yield Running(system, url, heard)
        finally:
            serving.cancel()
            await asyncio.gather(serving, return_exceptions=True)


async def _signed_in(page: Page, url: str, token: str) -> None:
    """The sign-in page's cookie, as a browser that signed in keeps it."""
    await page.context.add_cookies(
        [{"name": "lavalog_token", "value": token, "url": url, "sameSite": "Strict"}]
    )


@asynccontextmanager
async def another_site() -> AsyncIterator[str]:
    """A page of another origin on this machine (another port of 127.0.0.1: the same
    *site* to the browser, so SameSite=Strict still lets the cookie go along)."""

    async def page(request: web.Request) -> web.Response:
        return web.Response(
            text="<!doctype html><title>win a prize</title>", content_type="text/html"
        )

    app = web.Application()
    app.router.add_get("/", page)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}/"
    finally:
        await runner.cleanup()


FORGE = """async ([url, action]) => {
    const response = await fetch(url, {method: "POST", headers: {"content-type": "application/json"},
        body: JSON.stringify({action})});
    return [response.status, (await response.json()).error];
}"""


async def test_a_user_allowed_suspends_and_resumes_the_job_from_its_page(
    chromium: Path, running: Running
) -> None:
    system, url = running.system, running.url
    ARTIFACTS.mkdir(exist_ok=True)
    async with browser_page(chromium) as page:
        await _signed_in(page, url, "alice-token")
        await page.goto(url + PAGE)
        await expect(page.locator("h2 .badge")).to_have_text("Running", timeout=30_000)
        suspend = page.get_by_role("button", name="Suspend")
        await expect(suspend).to_be_enabled()
        await expect(page.get_by_role("button", name="Resume")).to_be_disabled()
        await expect(page.get_by_role("button", name="Restart")).to_be_enabled()
        await page.screenshot(path=str(ARTIFACTS / "projections-commands-allowed.png"))

        await suspend.click()  # asks first
        await expect(page.locator(".confirm-text")).to_contain_text("AbortJob")
        assert running.stored_commands() == 0 and running.commands == []
        await page.screenshot(path=str(ARTIFACTS / "projections-commands-confirm.png"))
        await page.get_by_role("button", name="Suspend job").click()
        await expect(page.locator("#command-status")).to_contain_text("created (AbortJob)")
        assert running.commands == [("alice", "create")]  # with her own token

        # the controller obeys it, and the page follows
        await system.until_phase(NAME, ["Aborted"], 60)
        assert system.log.phase_path(NAME)[-2:] == ["Aborting", "Aborted"]
        await expect(page.locator("h2 .badge")).to_have_text("Aborted", timeout=30_000)
        issued = page.locator("#kube-events tr[data-reason='CommandIssued']")
        await expect(issued).to_have_count(1)
        await expect(
            page.locator("#gantt g.kube-event[data-reasons*='CommandIssued']")
        ).to_have_count(1)
        await page.screenshot(
            path=str(ARTIFACTS / "projections-commands-aborted.png"), full_page=True
        )

        # from the keyboard: Enter on the button, the focus on the confirmation, Enter again
        resume = page.get_by_role("button", name="Resume")
        await expect(resume).to_be_enabled()
        await resume.focus()
        await page.keyboard.press("Enter")
        await expect(page.get_by_role("button", name="Resume job")).to_be_focused()
        await page.keyboard.press("Enter")
        await expect(page.locator("#command-status")).to_contain_text("created (ResumeJob)")
        await system.until_phase(NAME, ["Running"], 60)
        await expect(page.locator("h2 .badge")).to_have_text("Running", timeout=30_000)
        assert running.commands == [("alice", "create"), ("alice", "create")]


async def test_a_user_not_allowed_sees_no_button_and_a_forged_post_is_refused(
    chromium: Path, running: Running
) -> None:
    url = running.url
    commands = f"{url}api/v1/jobs/{NAMESPACE}/{NAME}/commands"
    async with browser_page(chromium) as page:
        await _signed_in(page, url, "bob-token")
        await page.goto(url + PAGE)
        await expect(page.locator("h2 .badge")).to_have_text("Running", timeout=30_000)
        await expect(page.locator("#gantt rect.attempt")).to_have_count(2)
        await expect(page.locator("#job-commands")).to_have_count(0)
        await expect(page.get_by_role("button", name="Suspend")).to_have_count(0)
        ARTIFACTS.mkdir(exist_ok=True)
        await page.screenshot(path=str(ARTIFACTS / "projections-commands-not-allowed.png"))
        # what the page does not offer, bob forges from it: the API refuses it
        status, error = await page.evaluate(FORGE, [commands, "suspend"])
        assert status == 403
        assert error == (
            'commands.bus.volcano.sh is forbidden: User "bob" cannot create resource'
            ' "commands" in API group "bus.volcano.sh" in the namespace "default"'
        )

    # a page of another site, opened by alice (signed in): its script posts with her cookie
    async with another_site() as elsewhere, browser_page(chromium) as page:
        await _signed_in(page, url, "alice-token")
        await page.goto(elsewhere)
        sent = await page.evaluate(
            """async (url) => {
                await fetch(url, {method: "POST", mode: "no-cors", credentials: "include",
                    headers: {"content-type": "text/plain"}, body: '{"action": "suspend"}'});
                return true;
            }""",
            commands,
        )
        assert sent is True
    assert running.commands == [] and running.stored_commands() == 0
    assert running.system.log.phase_path(NAME)[-1] == "Running"


@pytest.mark.cluster(nodes=0)
async def test_a_click_held_on_a_command_across_a_live_refresh_still_asks_to_confirm(
    chromium: Path, tmp_path: Path, sim_cluster: SimulatedCluster
) -> None:
    """A live job's page is drawn again on each of its events; one lands between the press
    on Suspend and its release: the click still asks for confirmation, since the buttons
    are drawn again only when what they show changes (the worker's failure leaves Suspend
    as it was)."""
    store, hub, the_failure = tf_mnist_until_its_failure(tmp_path)
    grant(sim_cluster)

    async with (
        connect(str(sim_cluster.kubeconfig_path)) as kube,
        serving(store, hub, KubernetesAuth(kube)) as url,
        browser_page(chromium) as page,
    ):
        await _signed_in(page, url, "alice-token")
        await page.goto(url + "#/jobs/team-a/tf-mnist")
        suspend = page.get_by_role("button", name="Suspend")
        await expect(suspend).to_be_enabled()
        job = re.compile(r"/api/v1/jobs/team-a/tf-mnist$")
        await click_held_across_a_refresh(page, suspend, job, the_failure)
        await expect(page.get_by_role("button", name="Suspend job")).to_be_visible()
