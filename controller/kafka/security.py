"""How every lavalog Kafka client connects: the broker list, TLS and SASL, in one place.

Producers, consumers, the admin client and the group client all take their connection
arguments from `connection_options`, so a deployment that turns on TLS or SASL (the
`LAVALOG_KAFKA_*` variables, docs/kafka.md) gets it on every connection, and a wrong
file is reported once, by name, before anything connects.
"""

from __future__ import annotations

import ssl
from typing import Any

from lavalog.controller.kafka.settings import KafkaSettings, env_var


def connection_options(settings: KafkaSettings) -> dict[str, Any]:
    """aiokafka client arguments for the settings' brokers, TLS and SASL.

    Raises ValueError, naming the variable, when a TLS file cannot be read or is not PEM.
    """
    options: dict[str, Any] = {
        "bootstrap_servers": settings.bootstrap_servers,
        "security_protocol": settings.security_protocol,
    }
    if settings.uses_tls:
        options["ssl_context"] = ssl_context(settings)
    if settings.uses_sasl:
        options["sasl_mechanism"] = settings.sasl_mechanism
        options["sasl_plain_username"] = settings.sasl_username
        options["sasl_plain_password"] = settings.sasl_password
    return options


def ssl_context(settings: KafkaSettings) -> ssl.SSLContext:
    """A client TLS context that verifies the brokers' certificates and host names against
    `ssl_cafile` alone (the system's CAs without one), presenting `ssl_certfile` if set."""
    try:
        context = ssl.create_default_context(cafile=settings.ssl_cafile or None)
    except (OSError, ssl.SSLError) as exc:  # with a CA file, only that CA is trusted
        raise ValueError(
            _unreadable(f"{env_var('ssl_cafile')}={settings.ssl_cafile}", exc)
        ) from None
    if settings.ssl_certfile:
        try:
            context.load_cert_chain(settings.ssl_certfile, settings.ssl_keyfile or None)
        except (OSError, ssl.SSLError) as exc:
            what = f"{env_var('ssl_certfile')}={settings.ssl_certfile}"
            if settings.ssl_keyfile:
                what += f" with {env_var('ssl_keyfile')}={settings.ssl_keyfile}"
            raise ValueError(_unreadable(what, exc)) from None
    return context


def _unreadable(what: str, exc: OSError) -> str:
    if isinstance(exc, ssl.SSLError):  # a subclass of OSError
        reason = f"not a PEM certificate or key ({exc.reason or exc})"
    else:
        reason = exc.strerror or str(exc)
    return f"{what}: cannot load it: {reason}"
