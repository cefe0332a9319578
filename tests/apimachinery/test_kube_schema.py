"""The schemas of Kubernetes' own types, as kubernetes-asyncio's models give them."""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lavalog.apimachinery import crds, kube_schema
from lavalog.cli.main import main


@pytest.fixture
def without_model_sources(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """As an install that ships only compiled modules: no model's source can be read."""

    def unreadable(obj: Any) -> str:
        raise OSError("could not get source code")

    monkeypatch.setattr(inspect, "getsource", unreadable)
    kube_schema.of.cache_clear()
    crds.object_schema.cache_clear()
    yield
    kube_schema.of.cache_clear()
    crds.object_schema.cache_clear()


@pytest.mark.parametrize(
    ("model", "required"),
    [
        ("V1Container", ["name"]),
        ("V1PodSpec", ["containers"]),
        ("V1OwnerReference", ["apiVersion", "kind", "name", "uid"]),
        ("V1ContainerPort", ["containerPort"]),
        ("V1EnvVar", ["name"]),
    ],
)
def test_required_fields_are_found_without_the_models_source(
    without_model_sources: None, model: str, required: list[str]
) -> None:
    assert kube_schema.of(model)["required"] == required


def test_a_model_with_no_required_field_has_no_required_list(without_model_sources: None) -> None:
    assert "required" not in kube_schema.of("V1ObjectMeta")
    assert "required" not in kube_schema.of("V1Toleration")


def test_validate_judges_a_job_without_the_models_source(
    without_model_sources: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "job.yaml"
    path.write_text(
        "apiVersion: batch.volcano.sh/v1alpha1\n"
        "kind: Job\n"
        "metadata: {name: train, namespace: ml}\n"
        "spec: {tasks: [{replicas: 1, template: {spec: {containers: [{name: c, image: i}]}}}]}\n"
    )
    assert main(["validate", str(path)]) == 0
    assert capsys.readouterr().out == f"{path}: job/ml/train: ok\n"
