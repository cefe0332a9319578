"""The projections' HTTP server as the network and a browser find it: security headers on
every answer, no versions in `Server`, slow request heads cut off, a cap on event streams,
no unauthenticated server beyond this machine, and one clear line (no traceback) when it
cannot start."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from lavalog.cli.main import main
from lavalog.projections.service.app import SECURITY_HEADERS, serve
from lavalog.projections.service.sources.file import FileSource
from lavalog.projections.service.store.sqlite import SqliteLocation
from lavalog.projections.service.store.writer import Store
from tests.projections.helpers import decided_examples, write_events
from tests.projections.service.test_surface import BEARER, guarded, store, token_file

__all__ = ["guarded", "store", "token_file"]  # the fixtures: a server with the shared token

pytestmark = pytest.mark.timeout(60)

Client = TestClient[web.Request, web.Application]


@pytest.fixture
def log(tmp_path: Path) -> Path:
    return write_events(tmp_path / "log.jsonl", decided_examples())


@pytest.mark.parametrize(
    ("path", "headers", "status"),
    [
        ("/", BEARER, 200),
        ("/ui/app.js", BEARER, 200),
        ("/api/v1/jobs", BEARER, 200),
        ("/api/v1/nothing-here", BEARER, 404),
        ("/api/v1/jobs", {}, 401),
        ("/", {"Accept": "text/html"}, 401),
        ("/healthz", {}, 200),
        ("/ui/sign-in.js", {}, 200),
    ],
)
async def test_every_answer_carries_the_security_headers(
    guarded: Client, path: str, headers: dict[str, str], status: int
) -> None:
    response = await guarded.get(path, headers=headers)
    assert response.status == status
    for name, value in SECURITY_HEADERS.items():
        assert response.headers[name] == value, name
    assert response.headers["Server"] == "lavalog"  # no Python or aiohttp version


async def test_the_policy_forbids_inline_code_and_framing() -> None:
    policy = SECURITY_HEADERS["Content-Security-Policy"]
    assert "script-src 'self';" in policy and "unsafe-inline" not in policy
    assert "frame-ancestors 'none'" in policy
    assert SECURITY_HEADERS["X-Content-Type-Options"] == "nosniff"
    for page in ("index.html", "sign-in.html"):
        html = (Path(__file__).parents[3] / "projections/service/http/ui" / page).read_text()
        assert "<script>" not in html and "<style>" not in html and " style=" not in html


async def test_streams_beyond_the_cap_are_refused_until_one_closes(guarded: Client) -> None:
    first = await guarded.get("/api/v1/stream", headers=BEARER)
    assert await first.content.readline() == b": stream open\n"
    refused = await guarded.get("/api/v1/stream", headers=BEARER)
    assert refused.status == 503
    assert refused.headers["Retry-After"] == "5"
    assert "1 event streams are open" in (await refused.json())["error"]
    first.close()
    for _ in range(100):  # the server notices the closed stream
        again = await guarded.get("/api/v1/stream", headers=BEARER)
        if again.status == 200:
            break
        await asyncio.sleep(0.05)
    assert again.status == 200


async def test_a_request_head_sent_too_slowly_is_cut_off(tmp_path: Path, log: Path) -> None:
    """A client that trickles its headers (slowloris) is disconnected once the header
    timeout has passed since it connected, however much it keeps sending."""
    started: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    location = SqliteLocation(tmp_path / "s.sqlite")
    server = asyncio.create_task(
        serve(
            location=location,
            open_store=lambda: Store(location),
            source=FileSource(log),
            host="127.0.0.1",
            port=0,
            header_timeout=0.5,
            started=started.set_result,
        )
    )
    try:
        port = int((await started).rstrip("/").rsplit(":", 1)[1])
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET /api/v1/jobs HTTP/1.1\r\nHost: x\r\n")
        cut = False
        for _ in range(100):  # 10 s of trickling, far beyond the timeout
            await asyncio.sleep(0.1)
            try:
                writer.write(b"X-Slow: 1\r\n")
                await writer.drain()
            except ConnectionError:
                cut = True
                break
            if reader.at_eof():
                cut = True
                break
        writer.close()
        assert cut, "the slow client was never disconnected"
    finally:
        server.cancel()
        await asyncio.gather(server, return_exceptions=True)


def _serve(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(["projections", "serve", *args])
    return code, capsys.readouterr().err


def test_a_busy_port_is_one_line(
    capsys: pytest.CaptureFixture[str], log: Path, tmp_path: Path
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code, err = _serve(
            capsys, "--from-file", str(log), "--state-dir", str(tmp_path), "--port", str(port)
        )
    assert code == 1
    assert err == (
        f"lavalog projections serve: port {port} on 127.0.0.1 is in use (another server?):"
        " choose another with --port\n"
    )


def test_a_missing_file_is_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, err = _serve(capsys, "--from-file", str(tmp_path / "nope.jsonl"), "--port", "0")
    assert code == 2
    assert (
        err == f"lavalog projections serve: --from-file {tmp_path / 'nope.jsonl'}: no such file\n"
    )


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.0.2.1"])
def test_without_authentication_only_this_machine_is_served(
    capsys: pytest.CaptureFixture[str], log: Path, host: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("LAVALOG_API_BEARER_FILE", "LAVALOG_KUBERNETES_AUTH"):
        monkeypatch.delenv(name, raising=False)
    code, err = _serve(capsys, "--from-file", str(log), "--host", host, "--port", "0")
    assert code == 2
    assert err.startswith(f"lavalog projections serve: --host {host} would serve")
    assert "--kubernetes-auth" in err and err.count("\n") == 1
    code = main(["replay", str(log), "--serve", "--host", host, "--port", "0"])
    assert code == 2
    assert "lavalog replay: --host" in capsys.readouterr().err


def test_serving_this_machine_without_authentication_says_so(
    spawn, log: Path, tmp_path: Path
) -> None:
    process = spawn(
        "projections", "serve", "--from-file", str(log), "--state-dir", str(tmp_path), "--port", "0"
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    assert line.startswith("projections at http://127.0.0.1:")
    assert line.rstrip().endswith("(no authentication: this machine only)")


def test_two_ways_to_authenticate_are_refused(
    capsys: pytest.CaptureFixture[str], log: Path, token_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LAVALOG_KUBERNETES_AUTH", "true")
    monkeypatch.setenv("LAVALOG_API_TOKEN_FILE", str(token_file))
    code, err = _serve(capsys, "--from-file", str(log), "--port", "0")
    assert code == 2
    assert "are both set: choose one way to authenticate" in err
