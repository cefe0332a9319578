"""`lavalog validate`: verdicts, exit codes and the defaulted output, on files in tmp_path."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from lavalog.cli.main import main

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


TYPOS = """\
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: typos, namespace: ml, lables: {team: a}}
spec:
  maxRetrys: 5
  tasks:
    - name: worker
      replica: 2
      replicas: 1
      template: {spec: {containers: [{name: w, image: trainer, imagePullPolicyy: Always}]}}
"""


def test_unknown_fields_are_warnings_with_the_closest_known_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "typos.yaml", TYPOS)
    assert main(["validate", path]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"{path}: job/ml/typos: ok (4 warnings)",
        "  warning: metadata.lables: unknown field, ignored (did you mean labels?)",
        "  warning: spec.maxRetrys: unknown field, ignored (did you mean maxRetry?)",
        "  warning: spec.tasks[0].replica: unknown field, ignored (did you mean replicas?)",
        "  warning: spec.tasks[0].template.spec.containers[0].imagePullPolicyy: unknown field, "
        "ignored (did you mean imagePullPolicy?)",
    ]


VOLUME_TYPO = """\
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: claims}
spec:
  volumes:
    - mountPath: /data
      volumeClaim: {accessModes: [ReadWriteOnce], storageClassNam: fast, resources: {requests: {storage: 1Gi}}}
  tasks:
    - name: worker
      replicas: 1
      template: {spec: {containers: [{name: w, image: trainer}]}}
"""


def test_every_part_of_the_job_is_held_to_volcanos_schema(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The volume claims too, which the controller passes on to the PVC it creates."""
    path = write(tmp_path, "claims.yaml", VOLUME_TYPO)
    assert main(["validate", path]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"{path}: job/claims: ok (1 warning)",
        "  warning: spec.volumes[0].volumeClaim.storageClassNam: unknown field, ignored "
        "(did you mean storageClassName?)",
    ]


def test_strict_makes_unknown_fields_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "typos.yaml", TYPOS)
    assert main(["validate", "--strict", "-o", "yaml", path]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""  # nothing accepted
    lines = captured.err.splitlines()
    assert lines[0] == f"{path}: job/ml/typos: 4 errors"
    assert lines[2] == "  spec.maxRetrys: unknown field (did you mean maxRetry?)"


def test_the_known_fields_of_volcanos_examples_are_not_warned_about(
    capsys: pytest.CaptureFixture[str],
) -> None:
    files = sorted(str(path) for path in (Path(__file__).parents[1] / "data").glob("*.yaml"))
    assert main(["validate", *files]) == 0
    assert "warning" not in capsys.readouterr().out


@pytest.mark.parametrize(
    ("text", "skipped"),
    [
        pytest.param("", [], id="empty"),
        pytest.param("# nothing yet\n---\n", [], id="only-comments"),
        pytest.param(
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\n",
            [": v1 ConfigMap settings: not a Volcano Job, skipped"],
            id="another-kind",
        ),
    ],
)
def test_a_file_without_a_job_says_so_and_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, skipped: list[str]
) -> None:
    path = write(tmp_path, "nothing.yaml", text)
    assert main(["validate", path]) == 1
    assert capsys.readouterr().out.splitlines() == [
        *(path + line for line in skipped),
        f"{path}: no Volcano Job (batch.volcano.sh/v1alpha1 Job) in it",
    ]


def test_other_kinds_beside_a_job_are_skipped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "mixed.yaml", f"apiVersion: v1\nkind: Pod\n---\n{GOOD}")
    assert main(["validate", path]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"{path}#1: v1 Pod: not a Volcano Job, skipped",
        f"{path}#2: job/ml/tf-train: ok",
    ]


def test_negative_replicas_say_what_the_number_means(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "negative.yaml", GOOD.replace("replicas: 2", "replicas: -2"))
    assert main(["validate", path]) == 1
    assert capsys.readouterr().out.splitlines() == [
        f"{path}: job/ml/tf-train: 1 error",
        "  spec.tasks[1].replicas: -2 is below 0; use 0 or more (the pods of this task)",
    ]


@pytest.mark.skipif(not yaml.__with_libyaml__, reason="PyYAML built without libyaml")
def test_manifests_are_read_with_libyaml_when_available(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    loaders: list[type] = []
    load_all = yaml.load_all

    def spy(stream: str, Loader: type) -> object:
        loaders.append(Loader)
        return load_all(stream, Loader)

    monkeypatch.setattr(yaml, "load_all", spy)
    assert main(["validate", write(tmp_path, "good.yaml", GOOD)]) == 0
    assert loaders == [yaml.CSafeLoader]


def test_extension_annotations_are_validated_as_the_controller_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    annotated = GOOD.replace(
        "metadata: {name: tf-train, namespace: ml}",
        'metadata: {name: tf-train, namespace: ml, annotations: {lavalog.io/restart-backoff: "1m,2,10s"}}',
    )
    path = write(tmp_path, "annotated.yaml", annotated)
    assert main(["validate", path]) == 1
    assert capsys.readouterr().out.splitlines()[1] == (
        "  metadata.annotations[lavalog.io/restart-backoff]: CAP 10s is shorter than INITIAL 1m:"
        " no delay could reach it"
    )
    good = annotated.replace("1m,2,10s", "10s,2,1m")
    assert main(["validate", write(tmp_path, "good.yaml", good)]) == 0
