"""deploy/ stays in step with the code: manifests parse, the Deployments' arguments are
accepted by the CLI, and the ClusterRole names each grant (that it grants exactly what the
controller uses is tests/e2e/test_cluster_role.py)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.deploy.conftest import cluster_role_grants

DEPLOY = Path(__file__).resolve().parents[2] / "deploy" / "base"


def documents(name: str) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all((DEPLOY / name).read_text()) if doc]


def kinds(kind: str) -> list[dict[str, Any]]:
    return [
        doc
        for name in ("controller.yaml", "projections.yaml", "rbac.yaml")
        for doc in documents(name)
        if doc["kind"] == kind
    ]


def parse_cli(argv: list[str]) -> argparse.Namespace:
    """Parse like `lavalog ARGV...`, descending into subcommand parsers."""
    from lavalog.cli.main import load

    module = load(argv[0])
    parser = argparse.ArgumentParser(prog=f"lavalog {argv[0]}", exit_on_error=False)
    module.configure(parser)
    return parser.parse_args(argv[1:])


@pytest.mark.parametrize("name", sorted(p.name for p in DEPLOY.glob("*.yaml")))
def test_manifests_parse_and_have_kinds(name):
    assert all("kind" in doc and "apiVersion" in doc for doc in documents(name))


@pytest.mark.parametrize("deployment", kinds("Deployment"), ids=lambda d: d["metadata"]["name"])
def test_deployment_arguments_are_accepted_by_the_cli(deployment):
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    parse_cli(container["args"])


def test_the_cluster_role_spells_out_every_grant():
    """No wildcard: a new resource or verb is a reviewed change to rbac.yaml."""
    assert not any("*" in part for grant in cluster_role_grants() for part in grant)
