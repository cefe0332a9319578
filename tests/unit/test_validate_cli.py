"""`lavalog validate`: verdicts, exit codes and the defaulted output, on files in tmp_path."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from controller.cli import main

GOOD = """\
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: tf-train, namespace: ml}
spec:
  plugins: {tensorflow: ["--ps=ps", "--worker=worker"]}
  tasks:
    - name: ps
      replicas: 1
      template: {spec: {containers: [{name: ps, image: tf}]}}
    - name: worker
      replicas: 2
      policies: [{event: PodFailed, action: RestartTask}]
      template: {spec: {containers: [{name: worker, image: tf}]}}
"""

BAD = """\
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: broken}
spec:
  policies: [{exitCode: 0, action: RestartJob}]
  tasks:
    - {name: Worker_1, replicas: 2}
"""


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_good_job_is_ok(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "good.yaml", GOOD)
    assert main(["validate", path]) == 0
    assert capsys.readouterr().out == f"{path}: job/ml/tf-train: ok\n"


def test_bad_job_lists_every_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "bad.yaml", BAD)
    assert main(["validate", path]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"{path}: job/broken: 2 errors"
    assert lines[1].startswith("  spec.tasks[0].name: 'Worker_1' is not a valid name")
    assert lines[2].startswith("  spec.policies[0].exitCode: 0 is not an error code")


def test_each_document_gets_a_verdict(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "both.yaml", f"{GOOD}---\n{BAD}---\n")
    assert main(["validate", path]) == 1
    out = capsys.readouterr().out
    assert f"{path}#1: job/ml/tf-train: ok" in out
    assert f"{path}#2: job/broken: 2 errors" in out


def test_output_yaml_prints_defaulted_jobs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "both.yaml", f"{GOOD}---\n{BAD}")
    assert main(["validate", "-o", "yaml", path]) == 1
    captured = capsys.readouterr()
    (job,) = yaml.safe_load_all(captured.out)
    assert job["metadata"]["name"] == "tf-train"
    spec = job["spec"]
    assert (spec["queue"], spec["schedulerName"], spec["maxRetry"]) == ("default", "volcano", 3)
    assert spec["minAvailable"] == 3
    assert spec["plugins"]["svc"] == []
    assert [task["minAvailable"] for task in spec["tasks"]] == [1, 2]
    assert "job/broken: 2 errors" in captured.err


def test_output_json_is_a_list(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "good.json", json.dumps(yaml.safe_load(GOOD)))
    assert main(["validate", "-o", "json", path]) == 0
    captured = capsys.readouterr()
    listing = json.loads(captured.out)
    assert listing["kind"] == "List"
    assert [item["spec"]["tasks"][0]["maxRetry"] for item in listing["items"]] == [3]
    assert "tf-train: ok" in captured.err


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            GOOD.replace("batch.volcano.sh/v1alpha1", "batch/v1"),
            "  apiVersion: must be 'batch.volcano.sh/v1alpha1', not 'batch/v1'",
            id="wrong-apiVersion",
        ),
        pytest.param(
            GOOD.replace("kind: Job", "kind: Pod"),
            "  kind: must be 'Job', not 'Pod'",
            id="wrong-kind",
        ),
        pytest.param(
            "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {name: x}\n",
            "  spec: required",
            id="no-spec",
        ),
        pytest.param("- just\n- a list\n", "  (document): must be a Job object", id="not-a-job"),
    ],
)
def test_not_a_volcano_job(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, expected: str
) -> None:
    path = write(tmp_path, "job.yaml", text)
    assert main(["validate", path]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert any(line.startswith(expected) for line in lines), lines


def test_unreadable_file_fails_but_others_are_checked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = write(tmp_path, "broken.yaml", "spec: [unclosed\n")
    good = write(tmp_path, "good.yaml", GOOD)
    missing = str(tmp_path / "missing.yaml")
    assert main(["validate", broken, missing, good]) == 1
    out = capsys.readouterr().out
    assert f"{broken}: cannot be read:" in out
    assert f"{missing}: cannot be read:" in out
    assert f"{good}: job/ml/tf-train: ok" in out
