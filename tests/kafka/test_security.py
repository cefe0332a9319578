"""TLS and SASL settings: from `LAVALOG_KAFKA_*` and flags to every client's arguments, and
one clear line (never a traceback or a hang) when the connection cannot be made.

tansu 0.6.0, the development broker, cannot serve TLS or SASL (its `--cert` listener does
not complete a handshake), so the successful TLS connections here go through a TLS
terminating relay in front of it: a real handshake with our client context (CA checks,
host names, client certificates), then plain Kafka to tansu. SASL is tested as far as a
broker without SASL allows: the mapping, and the refusal.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import shutil
import ssl
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from aiokafka import errors

from lavalog.cli.kafka_options import add_kafka_arguments, kafka_settings
from lavalog.controller.kafka import KafkaSettings
from lavalog.controller.kafka.probe import KafkaUnavailable, check_connection, explain
from lavalog.controller.kafka.security import connection_options

SECURE_ENV = {
    "LAVALOG_KAFKA_SECURITY_PROTOCOL": "sasl_ssl",
    "LAVALOG_KAFKA_SASL_MECHANISM": "SCRAM-SHA-512",
    "LAVALOG_KAFKA_SASL_USERNAME": "lavalog",
    "LAVALOG_KAFKA_SASL_PASSWORD": "s3cret",
}


# --- certificates -------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Pki:
    ca: Path
    other_ca: Path
    server: Path  # certificate and key, one PEM
    client_cert: Path
    client_key: Path


def _openssl(*args: str | Path, cwd: Path) -> None:
    subprocess.run(["openssl", *map(str, args)], cwd=cwd, check=True, capture_output=True)


def _issue(directory: Path, name: str, ca: str, subject: str, extension: str) -> None:
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out",
             f"{name}.csr", "-subj", subject, cwd=directory)  # fmt: skip
    (directory / f"{name}.ext").write_text(extension + "\n")
    _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.pem", "-CAkey", f"{ca}.key",
             "-CAcreateserial", "-out", f"{name}.pem", "-days", "2", "-extfile", f"{name}.ext",
             cwd=directory)  # fmt: skip


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed: cannot make test certificates")
    directory = tmp_path_factory.mktemp("pki")
    for ca in ("ca", "other-ca"):
        _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{ca}.key",
                 "-out", f"{ca}.pem", "-days", "2", "-subj", f"/CN={ca}", cwd=directory)  # fmt: skip
    _issue(directory, "server", "ca", "/CN=127.0.0.1", "subjectAltName=IP:127.0.0.1")
    _issue(directory, "client", "ca", "/CN=lavalog", "extendedKeyUsage=clientAuth")
    server = directory / "server-with-key.pem"
    server.write_text(
        (directory / "server.pem").read_text() + (directory / "server.key").read_text()
    )
    return Pki(
        ca=directory / "ca.pem",
        other_ca=directory / "other-ca.pem",
        server=server,
        client_cert=directory / "client.pem",
        client_key=directory / "client.key",
    )


@asynccontextmanager
async def tls_relay(
    pki: Pki, upstream: str, *, require_client_cert: bool = False
) -> AsyncIterator[str]:
    """A TLS listener on 127.0.0.1 that relays each connection to `upstream` in plaintext."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(pki.server)
    if require_client_cert:
        context.verify_mode = ssl.CERT_REQUIRED
        context.load_verify_locations(pki.ca)
    host, port = upstream.rsplit(":", 1)

    async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        except (ConnectionError, ssl.SSLError):
            pass
        finally:
            writer.close()

    async def relay(client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        broker_r, broker_w = await asyncio.open_connection(host, int(port))
        await asyncio.gather(pipe(client_r, broker_w), pipe(broker_r, client_w))

    server = await asyncio.start_server(relay, "127.0.0.1", 0, ssl=context)
    try:
        yield f"127.0.0.1:{server.sockets[0].getsockname()[1]}"
    finally:
        server.close()


# --- settings to client arguments (pure) --------------------------------------------


def test_every_security_variable_reaches_the_client_arguments(pki: Pki) -> None:
    settings = KafkaSettings.from_env(
        SECURE_ENV
        | {
            "LAVALOG_KAFKA_SSL_CAFILE": str(pki.ca),
            "LAVALOG_KAFKA_SSL_CERTFILE": str(pki.client_cert),
            "LAVALOG_KAFKA_SSL_KEYFILE": str(pki.client_key),
        }
    )
    options = connection_options(settings)
    assert options["security_protocol"] == "SASL_SSL"
    assert options["sasl_mechanism"] == "SCRAM-SHA-512"
    assert (options["sasl_plain_username"], options["sasl_plain_password"]) == ("lavalog", "s3cret")
    context = options["ssl_context"]
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    assert [dict(c["subject"][0])["commonName"] for c in context.get_ca_certs()] == ["ca"]


def test_plaintext_by_default_with_no_tls_or_sasl_arguments() -> None:
    options = connection_options(KafkaSettings())
    assert options == {"bootstrap_servers": "127.0.0.1:9092", "security_protocol": "PLAINTEXT"}


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_each_sasl_mechanism_is_accepted(mechanism: str) -> None:
    env = SECURE_ENV | {"LAVALOG_KAFKA_SASL_MECHANISM": mechanism.lower()}
    assert connection_options(KafkaSettings.from_env(env))["sasl_mechanism"] == mechanism


def test_the_password_never_shows_in_the_settings_repr() -> None:
    assert "s3cret" not in repr(KafkaSettings.from_env(SECURE_ENV))


@pytest.mark.parametrize(
    ("env", "message"),
    [
        pytest.param(
            {"LAVALOG_KAFKA_SECURITY_PROTOCOL": "TLS"}, "must be one of PLAINTEXT", id="protocol"
        ),
        pytest.param(
            SECURE_ENV | {"LAVALOG_KAFKA_SASL_MECHANISM": "GSSAPI"}, "PLAIN, SCRAM", id="mech"
        ),
        pytest.param(
            SECURE_ENV | {"LAVALOG_KAFKA_SASL_PASSWORD": ""}, "needs .*PASSWORD", id="no-password"
        ),
        pytest.param(
            {"LAVALOG_KAFKA_SASL_USERNAME": "u"}, "SASL credentials are set", id="sasl-unused"
        ),
        pytest.param({"LAVALOG_KAFKA_SSL_CAFILE": "/ca.pem"}, "TLS files are set", id="tls-unused"),
        pytest.param(
            {"LAVALOG_KAFKA_SECURITY_PROTOCOL": "SSL", "LAVALOG_KAFKA_SSL_KEYFILE": "/k.pem"},
            "KEYFILE needs LAVALOG_KAFKA_SSL_CERTFILE",
            id="key-alone",
        ),
    ],
)
def test_settings_that_would_connect_without_what_was_asked_are_refused(
    env: dict[str, str], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        KafkaSettings.from_env(env)


def test_flags_override_the_variables(monkeypatch: pytest.MonkeyPatch, pki: Pki) -> None:
    for name, value in SECURE_ENV.items():
        monkeypatch.setenv(name, value)
    parser = argparse.ArgumentParser()
    add_kafka_arguments(parser)
    args = parser.parse_args(
        ["--kafka-sasl-mechanism", "plain", "--kafka-ssl-cafile", str(pki.ca),
         "--bootstrap-servers", "kafka:9093", "--kafka-connect-timeout-ms", "1500"]
    )  # fmt: skip
    settings = kafka_settings(args)
    assert settings.sasl_mechanism == "PLAIN"
    assert settings.sasl_username == "lavalog"  # from the variable
    assert (settings.bootstrap_servers, settings.ssl_cafile) == ("kafka:9093", str(pki.ca))
    assert settings.connect_timeout_ms == 1500


# --- real connections ---------------------------------------------------------------


async def _failure(settings: KafkaSettings) -> tuple[str, float]:
    started = time.monotonic()
    with pytest.raises(KafkaUnavailable) as caught:
        await check_connection(settings)
    return str(caught.value), time.monotonic() - started


async def test_tls_with_the_right_ca_connects(pki: Pki, kafka_broker: str) -> None:
    async with tls_relay(pki, kafka_broker) as address:
        await check_connection(
            KafkaSettings(
                bootstrap_servers=address, security_protocol="SSL", ssl_cafile=str(pki.ca)
            )
        )


async def test_a_broker_certificate_from_another_ca_is_refused(pki: Pki, kafka_broker: str) -> None:
    async with tls_relay(pki, kafka_broker) as address:
        message, _ = await _failure(
            KafkaSettings(
                bootstrap_servers=address, security_protocol="SSL", ssl_cafile=str(pki.other_ca)
            )
        )
    assert f"not trusted by {pki.other_ca}" in message
    assert "LAVALOG_KAFKA_SSL_CAFILE" in message


async def test_mutual_tls_presents_the_client_certificate(pki: Pki, kafka_broker: str) -> None:
    with_cert = KafkaSettings(
        security_protocol="SSL",
        ssl_cafile=str(pki.ca),
        ssl_certfile=str(pki.client_cert),
        ssl_keyfile=str(pki.client_key),
    )
    async with tls_relay(pki, kafka_broker, require_client_cert=True) as address:
        await check_connection(dataclasses.replace(with_cert, bootstrap_servers=address))
        without = dataclasses.replace(
            with_cert, bootstrap_servers=address, ssl_certfile="", ssl_keyfile=""
        )
        message, _ = await _failure(without)
    assert message.startswith(f"cannot connect to Kafka at {address}: ")
    assert "\n" not in message


async def test_tls_against_a_plaintext_listener_fails_within_the_connect_timeout(
    pki: Pki, kafka_broker: str
) -> None:
    settings = KafkaSettings(
        bootstrap_servers=kafka_broker,
        security_protocol="SSL",
        ssl_cafile=str(pki.ca),
        connect_timeout_ms=1000,
    )
    message, took = await _failure(settings)
    assert "no answer within 1s" in message and "SECURITY_PROTOCOL=SSL" in message
    assert took < 5


async def test_sasl_against_a_listener_without_it_names_the_mechanism(kafka_broker: str) -> None:
    settings = KafkaSettings.from_env(
        SECURE_ENV | {"LAVALOG_KAFKA_SECURITY_PROTOCOL": "SASL_PLAINTEXT"}
    )
    message, _ = await _failure(dataclasses.replace(settings, bootstrap_servers=kafka_broker))
    assert "does not offer SASL SCRAM-SHA-512" in message


async def test_an_unreadable_ca_file_is_named() -> None:
    settings = KafkaSettings(security_protocol="SSL", ssl_cafile="/nonexistent/ca.pem")
    with pytest.raises(
        ValueError, match=r"LAVALOG_KAFKA_SSL_CAFILE=/nonexistent/ca\.pem: cannot load"
    ):
        await check_connection(settings)


def test_a_command_reports_a_bad_ca_file_in_one_line(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "lavalog.cli.main", "projections", "rebuild",
         "--state-dir", str(tmp_path), "--kafka-security-protocol", "SSL",
         "--kafka-ssl-cafile", str(tmp_path / "missing.pem")],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"lavalog projections rebuild: LAVALOG_KAFKA_SSL_CAFILE={tmp_path / 'missing.pem'}: "
        "cannot load it: No such file or directory"
    ]


def test_wrong_sasl_credentials_are_explained_by_name() -> None:
    """What the broker answers to a wrong user or password (SaslAuthenticate error 58);
    tansu has no SASL to answer it for real."""
    settings = KafkaSettings.from_env(SECURE_ENV)
    message = explain(errors.SaslAuthenticationFailed("Authentication failed"), settings)
    assert message == (
        "SASL SCRAM-SHA-512 authentication failed for user 'lavalog'; check "
        "LAVALOG_KAFKA_SASL_USERNAME and LAVALOG_KAFKA_SASL_PASSWORD"
    )
    assert "s3cret" not in message
