"""Acting for a caller (controller/kube.py `speaking_as`): a client of the same API server
that sends the caller's token and none of the server's own credentials, so the API server
authorizes the caller, not lavalog."""

from __future__ import annotations

import base64
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from lavalog.controller.kube import connect, speaking_as


def _kubeconfig(directory: Path) -> Path:
    """A kubeconfig whose user has both a client certificate and a token (as kind's and
    many admins' do), against a TLS server with its own CA (one self-signed certificate
    stands for all three)."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed: cannot make a test certificate")
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "key.pem",
         "-out", "cert.pem", "-days", "1", "-subj", "/CN=lavalog-test"],
        cwd=directory, check=True, capture_output=True,
    )  # fmt: skip
    cert = base64.b64encode((directory / "cert.pem").read_bytes()).decode()
    key = base64.b64encode((directory / "key.pem").read_bytes()).decode()
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "c",
                "cluster": {
                    "server": "https://api.example:6443",
                    "certificate-authority-data": cert,
                    "tls-server-name": "kubernetes.default",
                },
            }
        ],
        "users": [
            {
                "name": "u",
                "user": {
                    "client-certificate-data": cert,
                    "client-key-data": key,
                    "token": "the-servers-own-token",
                },
            }
        ],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "x",
    }
    path = directory / "config"
    path.write_text(yaml.safe_dump(doc))
    return path


async def test_a_client_for_a_caller_sends_their_token_and_none_of_the_servers(
    tmp_path: Path,
) -> None:
    async with connect(str(_kubeconfig(tmp_path)), client="lavalog-projections") as kube:
        own = kube.api.configuration
        assert own.cert_file and (await own.auth_settings())["BearerToken"]["value"].endswith(
            "the-servers-own-token"
        )
        async with speaking_as(kube, "alice-token") as caller:
            config = caller.api.configuration
            assert (config.host, config.ssl_ca_cert) == (own.host, own.ssl_ca_cert)
            assert config.tls_server_name == "kubernetes.default"
            assert config.cert_file is None and config.key_file is None
            assert (await config.auth_settings())["BearerToken"]["value"] == "Bearer alice-token"
            assert caller.api.user_agent == kube.api.user_agent
