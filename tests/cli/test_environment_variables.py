"""The docs say what the code does: every `LAVALOG_*` variable the docs name or the manifests
set is one the code reads (a variable documented but ignored would leave a setting silently
at its default), `lavalog run` takes each option from its variable as its help says, and
no document cites a file the repository does not hold."""

from __future__ import annotations

import argparse
import dataclasses
import re
from pathlib import Path

import pytest
import yaml

from lavalog.cli.commands import run as run_command
from lavalog.cli.kafka_options import kafka_settings
from lavalog.controller.kafka.settings import KafkaSettings, env_var
from lavalog.controller.kube import choose_kubeconfig

ROOT = Path(__file__).resolve().parents[2]
NAME = re.compile(r"LAVALOG_[A-Z0-9_]*[A-Z0-9]")
CODE = ("cli", "controller", "projections", "simulator", "events", "tests/conftest.py")


def _read_by_the_code() -> set[str]:
    read = {env_var(field.name) for field in dataclasses.fields(KafkaSettings)}
    for place in CODE:
        path = ROOT / place
        for source in [path] if path.is_file() else path.rglob("*.py"):
            text = source.read_text()
            read |= set(NAME.findall(text))
            # `lavalog sim`'s flags: _env("NODES", ...) reads LAVALOG_SIM_NODES
            if source.name == "sim.py":
                read |= {f"LAVALOG_SIM_{n}" for n in re.findall(r'_env\("([A-Z_]+)"', text)}
    return read


def _documented() -> dict[str, str]:
    """Variable -> the first file that names it (docs, READMEs, the manifests' env)."""
    found: dict[str, str] = {}
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for name in NAME.findall(path.read_text()):
            found.setdefault(name, str(path.relative_to(ROOT)))
    for path in sorted((ROOT / "deploy").rglob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            for name in NAME.findall(yaml.safe_dump(doc)) if doc else ():
                found.setdefault(name, str(path.relative_to(ROOT)))
    for path in sorted((ROOT / "deploy").rglob("*.md")):
        for name in NAME.findall(path.read_text()):
            found.setdefault(name, str(path.relative_to(ROOT)))
    return found


def test_every_documented_variable_is_read() -> None:
    read = _read_by_the_code()
    ignored = {name: where for name, where in _documented().items() if name not in read}
    assert ignored == {}


def test_the_check_sees_the_variables() -> None:
    """The two sets are not empty by a broken pattern."""
    documented = _documented()
    assert {"LAVALOG_BOOTSTRAP_SERVERS", "LAVALOG_STORE", "LAVALOG_SIM_NODES"} <= documented.keys()
    assert "LAVALOG_KAFKA_SASL_PASSWORD" in _read_by_the_code()


#: Kafka security settings that each sample below may change and stay valid
SASL = {
    "LAVALOG_KAFKA_SECURITY_PROTOCOL": "SASL_SSL",
    "LAVALOG_KAFKA_SASL_MECHANISM": "SCRAM-SHA-512",
    "LAVALOG_KAFKA_SASL_USERNAME": "user",
    "LAVALOG_KAFKA_SASL_PASSWORD": "password",
}
SAMPLES = {"kafka_security_protocol": "SASL_PLAINTEXT", "kafka_sasl_mechanism": "PLAIN"}
#: what an option's variable needs beside it to be valid
BESIDE = {
    "kafka_ssl_keyfile": {"LAVALOG_KAFKA_SSL_CERTFILE": "client.pem"},
    "kafka_session_timeout_ms": {"LAVALOG_HEARTBEAT_INTERVAL_MS": "1000"},
    "kafka_heartbeat_interval_ms": {"LAVALOG_SESSION_TIMEOUT_MS": "20000"},
}


def _sample(action: argparse.Action) -> tuple[str, object]:
    """A value to put in an option's variable, and what the option should then hold."""
    if action.dest in SAMPLES:
        return SAMPLES[action.dest], SAMPLES[action.dest]
    if action.type is int:
        return "4242", 4242
    if action.type is float:
        return "42.5", 42.5
    if isinstance(action, argparse.BooleanOptionalAction):
        return "true", True
    if action.choices:
        choice = sorted(action.choices)[-1]
        return choice, choice
    return "sample-value", "sample-value"


def test_every_option_of_lavalog_run_defaults_to_its_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """As `lavalog run --help` says: each option, set only by its LAVALOG_* variable."""
    parser = argparse.ArgumentParser()
    run_command.configure(parser)
    options = [a for a in parser._actions if a.option_strings and a.dest != "help"]
    assert len(options) > 10
    for action in options:
        kafka_field = action.dest.removeprefix("kafka_")
        variable = (
            env_var(kafka_field)
            if action.dest.startswith("kafka_")
            else f"LAVALOG_{action.dest.upper()}"
        )
        text, value = _sample(action)
        with monkeypatch.context() as patch:
            for name, base in {**SASL, **BESIDE.get(action.dest, {})}.items():
                patch.setenv(name, base)
            patch.setenv(variable, text)
            if action.dest == "kubeconfig":  # chosen at start, after the flag
                assert choose_kubeconfig(None).path == text
                continue
            parsed = argparse.ArgumentParser()
            run_command.configure(parsed)
            args = parsed.parse_args([])
            got = (
                getattr(kafka_settings(args), kafka_field)
                if action.dest.startswith("kafka_")
                else getattr(args, action.dest)
            )
            assert got == value, f"{action.option_strings[0]}: {variable} is ignored"


def test_no_document_cites_a_file_the_repository_does_not_hold() -> None:
    """The docs, the benchmarks and the code cite design notes by path: each must exist."""
    places = [ROOT / "README.md", *(ROOT / "docs").glob("*.md"), *(ROOT / "bench").glob("*.py")]
    for place in (*CODE[:-1], "deploy"):
        places += (ROOT / place).rglob("*.py")
        places += (ROOT / place).rglob("*.md")
    cited = {
        (str(path.relative_to(ROOT)), name)
        for path in places
        for name in re.findall(r"\b[A-Z][A-Z_]+\.md\b", path.read_text())
    }
    held = {path.name for path in ROOT.rglob("*.md") if ".venv" not in path.parts}
    missing = {(where, name) for where, name in cited if name not in held}
    assert missing == set()
