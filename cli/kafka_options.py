"""The Kafka options of every command that talks to Kafka: one set of flags over
`KafkaSettings.from_env()`, so a flag and its `LAVALOG_*` variable mean the same thing
in `lavalog run` and `lavalog projections`."""

from __future__ import annotations

import argparse
import dataclasses

from lavalog.controller.kafka import KafkaSettings
from lavalog.controller.kafka.settings import SASL_MECHANISMS, SECURITY_PROTOCOLS, env_var

#: flag -> settings field; each flag defaults to the field's variable, then its default
FLAGS = {
    "--bootstrap-servers": "bootstrap_servers",
    "--topic-prefix": "topic_prefix",
    "--kafka-security-protocol": "security_protocol",
    "--kafka-sasl-mechanism": "sasl_mechanism",
    "--kafka-sasl-username": "sasl_username",
    "--kafka-ssl-cafile": "ssl_cafile",
    "--kafka-ssl-certfile": "ssl_certfile",
    "--kafka-ssl-keyfile": "ssl_keyfile",
    "--kafka-connect-timeout-ms": "connect_timeout_ms",
    "--kafka-session-timeout-ms": "session_timeout_ms",
    "--kafka-heartbeat-interval-ms": "heartbeat_interval_ms",
}

_HELP = {
    "bootstrap_servers": "Kafka bootstrap servers, HOST:PORT[,HOST:PORT...]",
    "topic_prefix": "prefix of every topic name",
    "security_protocol": f"{', '.join(SECURITY_PROTOCOLS)}: TLS and/or SASL to the brokers",
    "sasl_mechanism": f"with SASL_*: {', '.join(SASL_MECHANISMS)}; the password comes only "
    f"from ${env_var('sasl_password')} (a Secret), never from a flag",
    "sasl_username": "SASL user name",
    "ssl_cafile": "PEM file of the CA that signed the brokers' certificates (default: the "
    "system's CAs)",
    "ssl_certfile": "PEM client certificate for mutual TLS (its key in it, or --kafka-ssl-keyfile)",
    "ssl_keyfile": "PEM key of the client certificate",
    "connect_timeout_ms": "give up connecting to the brokers after this long, with an error",
    "session_timeout_ms": "a consumer-group member silent this long loses its partitions to "
    "the others: how long a replacement under a new identity waits for them; Apache Kafka "
    "refuses values outside group.min/max.session.timeout.ms (6000-1800000 by default)",
    "heartbeat_interval_ms": "how often a group member tells the broker it lives; at most a "
    "third of the session timeout",
}


_METAVARS = {
    "bootstrap_servers": "HOST:PORT,...",
    "topic_prefix": "PREFIX",
    "security_protocol": "PROTOCOL",
    "sasl_mechanism": "MECHANISM",
    "sasl_username": "USER",
    "connect_timeout_ms": "MS",
    "session_timeout_ms": "MS",
    "heartbeat_interval_ms": "MS",
}


def add_kafka_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("Kafka")
    defaults = KafkaSettings()
    for flag, name in FLAGS.items():
        default = getattr(defaults, name)
        shown = f" (env {env_var(name)}" + (f", default {default})" if default != "" else ")")
        group.add_argument(
            flag,
            dest=f"kafka_{name}",
            metavar=_METAVARS.get(name, "FILE"),
            type=type(default),
            default=None,
            help=_HELP[name] + shown,
        )


def kafka_settings(args: argparse.Namespace) -> KafkaSettings:
    """The `LAVALOG_*` settings with the flags given on the command line over them.

    Raises ValueError with the variable's or flag's name for a bad value."""
    given = {
        name: getattr(args, f"kafka_{name}")
        for name in FLAGS.values()
        if getattr(args, f"kafka_{name}", None) is not None
    }
    if "security_protocol" in given:
        given["security_protocol"] = given["security_protocol"].upper()
    if "sasl_mechanism" in given:
        given["sasl_mechanism"] = given["sasl_mechanism"].upper()
    return dataclasses.replace(KafkaSettings.from_env(), **given)
