"""The web UI: static HTML, JS and SVG served by the API's app (no build step)."""

from __future__ import annotations

from pathlib import Path

from aiohttp import web

#: index.html, app.js and style.css
UI_DIR = Path(__file__).parent / "ui"


async def _index(request: web.Request) -> web.FileResponse:
    return web.FileResponse(UI_DIR / "index.html")


def add_routes(app: web.Application) -> None:
    app.router.add_get("/", _index)
    app.router.add_static("/ui/", UI_DIR)
