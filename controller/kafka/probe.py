"""One connection to a broker before a command starts its clients, to fail with a reason.

aiokafka's clients retry a broker they cannot reach and report only "Unable to bootstrap"
after logging each attempt, and a TLS client talking to a plaintext listener waits for
an answer that never comes. A command calls `check_connection` first: it connects to the
bootstrap brokers once each (TCP, TLS, SASL, one request), within
`KafkaSettings.connect_timeout_ms`, and raises `KafkaUnavailable` with one line that
says what failed and which setting to look at.
"""

from __future__ import annotations

import asyncio
import ssl

from aiokafka import errors
from aiokafka.conn import collect_hosts, create_conn

from lavalog.controller.kafka.security import connection_options
from lavalog.controller.kafka.settings import KafkaSettings, env_var


class KafkaUnavailable(errors.KafkaConnectionError):  # type: ignore[misc]
    """No bootstrap broker could be connected to; the message says why, in one line."""

    def __str__(self) -> str:  # KafkaError's prefixes the class name
        return str(self.args[0])


async def check_connection(settings: KafkaSettings) -> None:
    """Return once one bootstrap broker accepted a connection with these settings.

    Raises ValueError for unreadable TLS files and KafkaUnavailable otherwise.
    """
    options = connection_options(settings)
    del options["bootstrap_servers"]
    timeout = settings.connect_timeout_ms / 1000
    reasons = []
    for host, port, _family in collect_hosts(settings.bootstrap_servers, randomize=False):
        try:
            async with asyncio.timeout(timeout):
                connection = await create_conn(
                    host, port, request_timeout_ms=settings.connect_timeout_ms, **options
                )
        except Exception as exc:  # every failure becomes one explained line
            reasons.append(explain(exc, settings))
            continue
        connection.close()
        return
    why = "; ".join(dict.fromkeys(reasons)) or f"{env_var('bootstrap_servers')} is empty"
    raise KafkaUnavailable(f"cannot connect to Kafka at {settings.bootstrap_servers}: {why}")


def explain(exc: BaseException, settings: KafkaSettings) -> str:
    """Why one connection attempt failed, and which setting to check."""
    protocol = f"{env_var('security_protocol')}={settings.security_protocol}"
    if isinstance(exc, ssl.SSLCertVerificationError):
        where = settings.ssl_cafile or "the system's CA certificates"
        return (
            f"the broker's TLS certificate is not trusted by {where} ({exc.verify_message}); "
            f"check {env_var('ssl_cafile')}"
        )
    if isinstance(exc, ssl.SSLError):
        return (
            f"the TLS handshake failed ({exc.reason or exc}); is the listener TLS ({protocol})? "
            "Does it require a client certificate?"
        )
    if isinstance(exc, errors.UnsupportedSaslMechanismError):
        return (
            f"the broker does not offer SASL {settings.sasl_mechanism} (or no SASL on this "
            f"listener); check {env_var('sasl_mechanism')} and {protocol}"
        )
    if isinstance(
        exc,
        errors.SaslAuthenticationFailed
        | errors.AuthenticationFailedError
        | errors.IllegalSaslStateError,
    ):
        return (
            f"SASL {settings.sasl_mechanism} authentication failed for user "
            f"{settings.sasl_username!r}; check {env_var('sasl_username')} and "
            f"{env_var('sasl_password')}"
        )
    if isinstance(exc, TimeoutError):
        hint = (
            f"; a TLS client at a plaintext listener waits like this, check {protocol}"
            if settings.uses_tls
            else ""
        )
        return f"no answer within {settings.connect_timeout_ms / 1000:g}s{hint}"
    if isinstance(exc, ConnectionRefusedError):
        return (
            "connection refused, no broker listens there; start one (`lavalog broker` runs a "
            f"development broker) or set --bootstrap-servers or ${env_var('bootstrap_servers')}"
        )
    if isinstance(exc, errors.KafkaConnectionError):
        return (
            "the connection closed before a Kafka answer; is this a Kafka listener, and does "
            f"it expect TLS or SASL ({protocol})?"
        )
    if isinstance(exc, OSError):
        return f"{exc.strerror or exc}"
    return f"{type(exc).__name__}: {exc}"
