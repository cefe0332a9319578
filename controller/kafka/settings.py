"""How lavalog talks to Kafka: one frozen settings value, with `LAVALOG_*` defaults.

Every Kafka-facing part (watchers, decider, actuator, projections, tests) builds its
clients and topics from one `KafkaSettings`, so a deployment changes a partition count
or a client option in one place. The defaults suit both tansu and Apache Kafka, except
that production should set `LAVALOG_REPLICATION_FACTOR=3` and may set
`LAVALOG_ENABLE_IDEMPOTENCE=true` (tansu lacks it; see docs/kafka.md).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

Acks = Literal[0, 1, "all"]

#: Kafka's names for how a client connects: TLS or not, SASL or not
SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")

#: fields read from `LAVALOG_KAFKA_*` (the names the manifests' Secrets use), not `LAVALOG_*`
_KAFKA_PREFIXED = frozenset(
    {
        "security_protocol",
        "sasl_mechanism",
        "sasl_username",
        "sasl_password",
        "ssl_cafile",
        "ssl_certfile",
        "ssl_keyfile",
        "connect_timeout_ms",
    }
)


@dataclass(frozen=True, kw_only=True)
class KafkaSettings:
    """Kafka connection, topic layout and producer options.

    Each field's environment variable is `LAVALOG_` + its name in capitals, e.g.
    `LAVALOG_BOOTSTRAP_SERVERS`, `LAVALOG_OBSERVED_PARTITIONS`; the connection's security
    fields take `LAVALOG_KAFKA_` instead, e.g. `LAVALOG_KAFKA_SASL_USERNAME`.
    """

    bootstrap_servers: str = "127.0.0.1:9092"
    #: PLAINTEXT, SSL (TLS), SASL_PLAINTEXT or SASL_SSL (SASL over TLS)
    security_protocol: str = "PLAINTEXT"
    #: with a SASL_* protocol: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512
    sasl_mechanism: str = ""
    sasl_username: str = ""
    #: kept out of repr() so that a logged settings value never shows it
    sasl_password: str = field(default="", repr=False)
    #: PEM file of the CA that signed the brokers' certificates (default: the system's)
    ssl_cafile: str = ""
    #: PEM client certificate (and its key, unless `ssl_keyfile`), for mutual TLS
    ssl_certfile: str = ""
    ssl_keyfile: str = ""
    #: how long connecting to a broker (TCP, TLS, SASL and the first answer) may take
    #: before a command gives up with an error instead of waiting; as long as Java
    #: clients' socket.connection.setup.timeout.max.ms, so that a broker that restarts
    #: or pauses (chaos: 10 s) while lavalog starts is waited for
    connect_timeout_ms: int = 30_000
    #: prepended to every topic name, so that tests and tenants can share one broker
    topic_prefix: str = ""
    observed_partitions: int = 12
    decisions_partitions: int = 12
    #: compacted decider snapshots; co-partitioned with `observed` (same count)
    state_partitions: int = 12
    deadletter_partitions: int = 1
    #: 1 on the development broker; 3 on a production cluster
    replication_factor: int = 1
    client_id: str = "lavalog"
    acks: Acks = "all"
    #: how long the producer waits to fill a batch: throughput for a little latency
    linger_ms: int = 5
    max_batch_size: int = 256 * 1024
    #: off by default: tansu does not implement InitProducerId
    enable_idempotence: bool = False
    #: a group member silent this long is evicted and its partitions move to the others:
    #: a replacement under a new identity waits this long for them. Apache Kafka refuses
    #: less than its group.min.session.timeout.ms (6 s by default), its floor here
    session_timeout_ms: int = 6_000
    #: at most a third of the session timeout, so that two lost heartbeats are forgiven
    heartbeat_interval_ms: int = 2_000
    #: how long a fetch may wait on the broker for records; tansu answers a waiting fetch
    #: only when this runs out (new records do not wake it), so it bounds every hop's
    #: latency there; Apache Kafka answers as soon as records arrive (500 is fine there)
    fetch_max_wait_ms: int = 20
    #: the same while this process's producers hand a consumer every record it takes
    #: (local delivery): its fetches then bring only copies, and a tansu fetch costs the
    #: broker a walk over each partition's batches, so they go out less often; a record
    #: from another producer (a Command) waits up to this much longer there
    fetch_max_wait_local_ms: int = 200
    #: this process's stable name in consumer groups (`lavalog run` sets its identity, the
    #: pod name): a restarted process of the same name takes its predecessor's place at
    #: once instead of waiting for that member's session to time out (controller/kafka/groups.py)
    group_instance_id: str = ""
    #: Apache Kafka: name members with `group.instance.id` (static membership, KIP-345)
    #: instead of removing the predecessor; tansu pauses every static join 3 s (docs/kafka.md)
    static_membership: bool = False

    def __post_init__(self) -> None:
        for name in (
            "observed_partitions",
            "decisions_partitions",
            "state_partitions",
            "deadletter_partitions",
            "replication_factor",
            "max_batch_size",
            "session_timeout_ms",
            "heartbeat_interval_ms",
            "connect_timeout_ms",
        ):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, not {getattr(self, name)}")
        for name in ("linger_ms", "fetch_max_wait_ms", "fetch_max_wait_local_ms"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must not be negative, not {getattr(self, name)}")
        if self.acks not in (0, 1, "all"):
            raise ValueError(f"acks must be 0, 1 or 'all', not {self.acks!r}")
        if self.heartbeat_interval_ms * 3 > self.session_timeout_ms:
            raise ValueError(
                f"{env_var('heartbeat_interval_ms')} ({self.heartbeat_interval_ms} ms) must be "
                f"at most a third of {env_var('session_timeout_ms')} "
                f"({self.session_timeout_ms} ms), as Kafka advises: a member that misses one "
                "heartbeat must not lose its partitions"
            )
        if self.enable_idempotence and self.acks != "all":
            raise ValueError("an idempotent producer needs acks='all'")
        self._check_security()

    @property
    def fetch_waits(self) -> tuple[int, int]:
        """A consumer's fetch waits in ms: fed by its fetches, fed here (`FetchPace`)."""
        return self.fetch_max_wait_ms, self.fetch_max_wait_local_ms

    @property
    def uses_tls(self) -> bool:
        return self.security_protocol in ("SSL", "SASL_SSL")

    @property
    def uses_sasl(self) -> bool:
        return self.security_protocol.startswith("SASL_")

    def _check_security(self) -> None:
        """Refuse combinations that would silently connect without what was asked for."""
        protocol = env_var("security_protocol")
        if self.security_protocol not in SECURITY_PROTOCOLS:
            raise ValueError(
                f"{protocol} must be one of {', '.join(SECURITY_PROTOCOLS)}, "
                f"not {self.security_protocol!r}"
            )
        if self.uses_sasl:
            if self.sasl_mechanism not in SASL_MECHANISMS:
                raise ValueError(
                    f"{env_var('sasl_mechanism')} must be one of {', '.join(SASL_MECHANISMS)} "
                    f"with {protocol}={self.security_protocol}, not {self.sasl_mechanism!r}"
                )
            if not self.sasl_username or not self.sasl_password:
                raise ValueError(
                    f"{protocol}={self.security_protocol} needs {env_var('sasl_username')} "
                    f"and {env_var('sasl_password')}"
                )
        elif self.sasl_mechanism or self.sasl_username or self.sasl_password:
            raise ValueError(
                f"SASL credentials are set but {protocol} is {self.security_protocol}: "
                "use SASL_SSL (or SASL_PLAINTEXT)"
            )
        files = ("ssl_cafile", "ssl_certfile", "ssl_keyfile")
        if not self.uses_tls and any(getattr(self, name) for name in files):
            raise ValueError(
                f"TLS files are set but {protocol} is {self.security_protocol}: "
                "use SSL (or SASL_SSL)"
            )
        if self.ssl_keyfile and not self.ssl_certfile:
            raise ValueError(f"{env_var('ssl_keyfile')} needs {env_var('ssl_certfile')}")

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> KafkaSettings:
        """Settings from `LAVALOG_*` variables; fields without one keep their default.

        Override single fields afterwards with `dataclasses.replace`.
        """
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for setting in dataclasses.fields(cls):
            variable = env_var(setting.name)
            if variable in env:
                parse = _PARSERS.get(setting.name, type(setting.default))
                try:
                    values[setting.name] = parse(env[variable])
                except ValueError as exc:
                    raise ValueError(f"{variable}={env[variable]!r}: {exc}") from exc
        return cls(**values)


def env_var(field_name: str) -> str:
    """The environment variable behind one settings field."""
    prefix = "LAVALOG_KAFKA_" if field_name in _KAFKA_PREFIXED else "LAVALOG_"
    return f"{prefix}{field_name.upper()}"


def _parse_bool(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off", ""):
        return False
    raise ValueError("expected true or false")


def _parse_acks(text: str) -> Acks:
    lowered = text.strip().lower()
    if lowered in ("all", "-1"):
        return "all"
    if lowered == "0":
        return 0
    if lowered == "1":
        return 1
    raise ValueError("expected 0, 1 or all")


def _parse_upper(text: str) -> str:
    return text.strip().upper()


_PARSERS: dict[str, Callable[[str], Any]] = {
    "security_protocol": _parse_upper,
    "sasl_mechanism": _parse_upper,
    "enable_idempotence": _parse_bool,
    "static_membership": _parse_bool,
    "acks": _parse_acks,
}
