"""The controller's Kubernetes client sends its requests itself, through kubernetes-asyncio's
session: what kubernetes-asyncio would have put on the wire is still there (the proxy from
the environment, the kubeconfig's token, the query, the content type, the JSON body)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import pytest_asyncio

from lavalog.controller.kube import MERGE_PATCH, connect


@dataclass
class _Seen:
    request_line: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""


@pytest_asyncio.fixture
async def proxy() -> AsyncIterator[tuple[str, _Seen]]:
    """An HTTP proxy on loopback that answers every request itself with `{}`, keeping the
    last one it was sent."""
    seen = _Seen()

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = (await reader.readuntil(b"\r\n\r\n")).decode()
        line, *fields = head.strip().split("\r\n")
        seen.request_line = line
        seen.headers = {k.lower(): v.strip() for k, _, v in (f.partition(":") for f in fields)}
        seen.body = await reader.readexactly(int(seen.headers.get("content-length", "0")))
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        yield f"http://127.0.0.1:{port}", seen


def _kubeconfig(path: Path) -> Path:
    path.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": "http://kube.invalid:6443"}}],
                "users": [{"name": "u", "user": {"token": "s3cret"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    return path


async def test_a_request_goes_through_the_proxy_with_its_token_query_and_json_body(
    proxy: tuple[str, _Seen], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    address, seen = proxy
    for variable in ("NO_PROXY", "no_proxy", "HTTPS_PROXY", "https_proxy"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("HTTP_PROXY", address)
    body = {"metadata": {"labels": {"a": "b"}}, "spec": {"replicas": 2, "ratio": 0.5}}

    async with connect(str(_kubeconfig(tmp_path / "kubeconfig"))) as kube:
        answer = await kube.request(
            "PATCH",
            "/api/v1/namespaces/ns/pods/p",
            query={"dryRun": "All", "force": True},
            body=body,
            content_type=MERGE_PATCH,
        )

    assert answer == b"{}"
    # the absolute form: the request was sent to the proxy, for the kubeconfig's server
    assert seen.request_line == (
        "PATCH http://kube.invalid:6443/api/v1/namespaces/ns/pods/p?dryRun=All&force=true HTTP/1.1"
    )
    assert seen.headers["authorization"] == "Bearer s3cret"
    assert seen.headers["content-type"] == MERGE_PATCH
    assert seen.headers["accept"] == "application/json"
    assert seen.headers["user-agent"].startswith("lavalog/")
    assert json.loads(seen.body) == body
