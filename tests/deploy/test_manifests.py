"""deploy/ stays in step with the code: manifests parse, the Deployments' arguments are
accepted by the CLI, and the ClusterRole grants every resource the controller uses."""

from __future__ import annotations

import argparse
import importlib
from pathlib import Path
from typing import Any

import pytest
import yaml

from controller.actuator import paths
from controller.watchers import watch

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
    from controller.cli import COMMANDS

    module = importlib.import_module(COMMANDS[argv[0]])
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


def granted() -> set[tuple[str, str, str]]:
    (role,) = [doc for doc in documents("rbac.yaml") if doc["kind"] == "ClusterRole"]
    return {
        (group, resource, verb)
        for rule in role["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }


def group_of(api_version: str) -> str:
    return api_version.rpartition("/")[0]


def needed() -> set[tuple[str, str, str]]:
    """What the code itself names: watched kinds, written kinds, status, leases."""
    wants = {
        (
            group_of(resource.prefix.removeprefix("/apis/").removeprefix("/api/")),
            resource.plural,
            verb,
        )
        for resource in (watch.PODS, watch.JOBS, watch.PODGROUPS, watch.COMMANDS)
        for verb in ("list", "watch")
    }
    for (api_version, _kind), plural in paths._PLURALS.items():
        group = group_of(api_version)
        wants |= {(group, plural, "get"), (group, plural, "create")}
    wants |= {
        ("", "pods", "delete"),
        ("bus.volcano.sh", "commands", "delete"),
        ("scheduling.volcano.sh", "podgroups", "delete"),
        ("scheduling.volcano.sh", "podgroups", "update"),
        ("batch.volcano.sh", "jobs", "delete"),
        ("batch.volcano.sh", "jobs", "update"),
        ("batch.volcano.sh", "jobs/status", "update"),
        ("scheduling.k8s.io", "priorityclasses", "get"),
        ("coordination.k8s.io", "leases", "get"),
        ("coordination.k8s.io", "leases", "create"),
        ("coordination.k8s.io", "leases", "update"),
    }
    # the actuator never creates the Job it reconciles
    wants.discard(("batch.volcano.sh", "jobs", "create"))
    return wants


def test_the_cluster_role_grants_what_the_controller_uses():
    assert needed() - granted() == set()


def test_the_cluster_role_spells_out_every_grant():
    """No wildcard: a new resource or verb is a reviewed change to rbac.yaml."""
    assert not any("*" in part for grant in granted() for part in grant)
