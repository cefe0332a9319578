"""The read commands behave like kubectl: `-o wide|json|yaml`, `-n`/`-A` and the kubeconfig's
namespace, exit codes for scripts, and the same answers from a remote projections API
(`--server`, `--token-file`) as from a local store."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from aiohttp import web

from lavalog.cli.main import main
from lavalog.projections.service.app import create_app
from lavalog.projections.service.http.auth import SharedToken, TokenFile
from lavalog.projections.service.live import LiveHub
from lavalog.projections.service.sources.file import read_file
from lavalog.projections.service.store.queries import Queries
from lavalog.projections.service.store.writer import Store, load
from tests.projections.helpers import decided_examples, write_events
from tests.projections.service.test_api import Status

pytestmark = pytest.mark.timeout(60)

ML_JOBS = {"ml/tf-dist", "ml/flaky-train", "ml/batch-eval"}


@pytest.fixture(scope="module")
def log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_events(tmp_path_factory.mktemp("log") / "examples.jsonl", decided_examples())


@pytest.fixture(autouse=True)
def no_kubeconfig(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No kubeconfig unless a test writes one: the default namespace is `default`."""
    monkeypatch.setenv("HOME", str(tmp_path))
    for name in ("KUBECONFIG", "LAVALOG_KUBECONFIG", "LAVALOG_SERVER", "LAVALOG_API_TOKEN_FILE"):
        monkeypatch.delenv(name, raising=False)


def lavalog(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def keys(out: str) -> set[str]:
    return {job["key"] for job in json.loads(out)}


# --- namespaces ------------------------------------------------------------------------


def test_namespace_flags_and_the_kubeconfig_context(
    capsys: pytest.CaptureFixture[str], log: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = ("--file", str(log), "-o", "json")
    code, out, err = lavalog(capsys, "jobs", "--file", str(log))
    assert (code, out) == (0, "")
    assert "no jobs in namespace default (-A: every namespace)" in err
    assert keys(lavalog(capsys, "jobs", *source, "-A")[1]) == ML_JOBS | {"hpc/mpi-allreduce"}
    assert keys(lavalog(capsys, "jobs", *source, "-n", "hpc")[1]) == {"hpc/mpi-allreduce"}
    kubeconfig = tmp_path / "config"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "current-context": "work",
                "contexts": [
                    {"name": "other", "context": {"namespace": "hpc"}},
                    {"name": "work", "context": {"cluster": "c", "namespace": "ml"}},
                ],
            }
        )
    )
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    assert keys(lavalog(capsys, "jobs", *source)[1]) == ML_JOBS
    code, out, _ = lavalog(capsys, "timeline", "tf-dist", "--file", str(log))
    assert code == 0 and out.startswith("ml/tf-dist  uid")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("jobs", "-A", "-n", "ml"), "-A and -n together"),
        (("timeline", "ml/tf-dist", "-n", "hpc"), "job ml/tf-dist is not in namespace hpc"),
        (("events", "a/b/c"), "NAMESPACE/NAME"),
        (("jobs", "--phase", "Exploded"), "phase: no phase 'Exploded'"),
    ],
)
def test_bad_usage_exits_2(
    capsys: pytest.CaptureFixture[str], log: Path, args: tuple[str, ...], message: str
) -> None:
    code, _, err = lavalog(capsys, *args, "--file", str(log))
    assert code == 2
    assert message in err


# --- output formats ------------------------------------------------------------------


def test_wide_adds_columns(capsys: pytest.CaptureFixture[str], log: Path) -> None:
    _, narrow, _ = lavalog(capsys, "jobs", "--file", str(log), "-n", "ml")
    code, wide, _ = lavalog(capsys, "jobs", "--file", str(log), "-n", "ml", "-o", "wide")
    assert code == 0
    assert wide.splitlines()[0].split("  ")[0] == narrow.splitlines()[0].split("  ")[0]
    assert wide.splitlines()[0].split()[-4:] == ["VERSION", "UPDATED", "FINISHED", "UID"]
    uids = {json.loads(line)["job_uid"] for line in log.read_text().splitlines()}
    assert all(row.split()[-1] in uids for row in wide.splitlines()[1:])


def test_timeline_wide_shows_absolute_times_and_decision_ids(
    capsys: pytest.CaptureFixture[str], log: Path
) -> None:
    _, text, _ = lavalog(capsys, "timeline", "ml/flaky-train", "--file", str(log))
    code, wide, _ = lavalog(capsys, "timeline", "ml/flaky-train", "--file", str(log), "-o", "wide")
    assert code == 0 and len(wide.splitlines()) > len(text.splitlines())
    events = [json.loads(line) for line in log.read_text().splitlines()]
    decided = [
        e["id"] for e in events if e["key"] == "ml/flaky-train" and e["type"] == "ActionDecided"
    ]
    assert decided and all(f"[{decision}]" in wide for decision in decided)
    phases = wide.split("\nphases\n")[1].split("\n\n")[0].splitlines()
    assert all(line.split()[0].endswith("Z") and "." in line.split()[0] for line in phases)


def test_events_wide_shows_topic_and_id(capsys: pytest.CaptureFixture[str], log: Path) -> None:
    code, wide, _ = lavalog(capsys, "events", "ml/tf-dist", "--file", str(log), "-o", "wide")
    assert code == 0
    events = [json.loads(line) for line in log.read_text().splitlines()]
    first = next(event for event in events if event["key"] == "ml/tf-dist")
    line = wide.splitlines()[0].split()
    assert (line[1], line[2], line[3]) == ("observation", first["id"], first["job_uid"])


def test_json_times_are_the_apis(capsys: pytest.CaptureFixture[str], log: Path) -> None:
    _, out, _ = lavalog(capsys, "jobs", "--file", str(log), "-A", "-o", "json")
    assert all(job["submitted"].endswith("Z") for job in json.loads(out))
    _, out, _ = lavalog(capsys, "timeline", "ml/tf-dist", "--file", str(log), "-o", "yaml")
    timeline = yaml.safe_load(out)
    assert isinstance(timeline["phases"][0]["start"], str) and isinstance(
        timeline["run_time"], float | int
    )


# --- exit codes ----------------------------------------------------------------------


def test_exit_codes(capsys: pytest.CaptureFixture[str], log: Path, tmp_path: Path) -> None:
    assert lavalog(capsys, "timeline", "ml/tf-dist", "--file", str(log))[0] == 0
    assert lavalog(capsys, "timeline", "ml/nothing", "--file", str(log))[0] == 1
    assert lavalog(capsys, "events", "ml/nothing", "--file", str(log))[0] == 1
    assert lavalog(capsys, "timeline", "ml/tf-dist", "--state-dir", str(tmp_path))[0] == 3
    code, _, err = lavalog(capsys, "jobs", "-A", "--server", "http://127.0.0.1:9")
    assert code == 3 and "cannot reach http://127.0.0.1:9" in err


@pytest.mark.parametrize("command", ["jobs", "timeline", "events", "export", "validate"])
def test_help_documents_the_exit_codes(capsys: pytest.CaptureFixture[str], command: str) -> None:
    with pytest.raises(SystemExit):
        main([command, "--help"])
    out = capsys.readouterr().out
    assert "exit codes:\n  0: " in out
    assert "\n  2: bad usage" in out


def test_validate_wide_and_namespace(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    manifest = tmp_path / "job.yaml"
    manifest.write_text(
        yaml.safe_dump_all(
            [
                {
                    "apiVersion": "batch.volcano.sh/v1alpha1",
                    "kind": "Job",
                    "metadata": {"name": "train"},
                    "spec": {
                        "tasks": [
                            {
                                "name": "w",
                                "replicas": 3,
                                "template": {"spec": {"containers": [{"name": "c", "image": "i"}]}},
                            }
                        ]
                    },
                },
                {
                    "apiVersion": "batch.volcano.sh/v1alpha1",
                    "kind": "Job",
                    "metadata": {"name": "other", "namespace": "team-b"},
                    "spec": {
                        "tasks": [
                            {
                                "name": "w",
                                "replicas": 1,
                                "template": {"spec": {"containers": [{"name": "c", "image": "i"}]}},
                            }
                        ]
                    },
                },
            ]
        )
    )
    code, out, _ = lavalog(capsys, "validate", str(manifest), "-o", "wide")
    assert code == 0
    header, first, second = out.splitlines()
    assert header.split()[:3] == ["FILE", "JOB", "QUEUE"]
    assert first.split()[1:5] == ["train", "default", "1", "3"]  # Volcano's default queue
    assert second.split()[1] == "team-b/other"
    code, out, _ = lavalog(capsys, "validate", str(manifest), "-n", "team-a", "-o", "yaml")
    assert code == 1  # `other` names team-b
    assert [job["metadata"]["namespace"] for job in yaml.safe_load_all(out)] == ["team-a"]
    code, out, _ = lavalog(capsys, "validate", str(manifest), "-n", "team-a")
    assert "metadata.namespace: is 'team-b', not 'team-a' as -n says" in out


# --- a remote projections API ----------------------------------------------------------


@pytest.fixture(scope="module")
def server(log: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """`lavalog projections serve`'s app over the examples, with a token, in a thread."""
    directory = tmp_path_factory.mktemp("served")
    store = Store(directory / "s.sqlite")
    load(store, read_file(log))
    store.close()
    token = directory / "token"
    token.write_text("remote-token\n")
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    queries = Queries(directory / "s.sqlite")

    async def start() -> web.AppRunner:
        app = create_app(
            queries=queries,
            hub=LiveHub(),
            status=Status(),
            authenticator=SharedToken(TokenFile(token)),
        )
        runner = web.AppRunner(app)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        return runner

    runner = asyncio.run_coroutine_threadsafe(start(), loop).result(timeout=30)
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}", token
    finally:
        asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(timeout=30)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=30)
        queries.close()


READS = [
    ("jobs", "-A", "-o", "json"),
    ("jobs", "-n", "ml", "-o", "wide"),
    ("jobs", "-A", "--phase", "Failed", "-o", "yaml"),
    ("timeline", "ml/flaky-train"),
    ("timeline", "ml/flaky-train", "-o", "wide"),
    ("timeline", "ml/tf-dist", "-o", "json"),
    ("events", "ml/tf-dist", "-o", "json"),
    ("events", "ml/flaky-train", "-o", "wide"),
    ("export", "hpc/mpi-allreduce"),
    ("audit", "-o", "json"),
    ("timeline", "ml/nothing"),
    ("timeline", "ml/tf-dist", "--incarnation", "2"),
]


@pytest.mark.parametrize("args", READS, ids=" ".join)
def test_a_remote_api_answers_as_the_local_store(
    capsys: pytest.CaptureFixture[str], log: Path, server: tuple[str, Path], args: tuple[str, ...]
) -> None:
    url, token = server
    local = lavalog(capsys, *args, "--file", str(log))
    remote = lavalog(capsys, *args, "--server", url, "--token-file", str(token))
    assert remote == local


def test_a_remote_api_without_the_token_is_exit_3(
    capsys: pytest.CaptureFixture[str], server: tuple[str, Path], tmp_path: Path
) -> None:
    url, _ = server
    code, _, err = lavalog(capsys, "jobs", "-A", "--server", url)
    assert code == 3 and "needs a valid token (401): pass --token-file" in err
    wrong = tmp_path / "wrong"
    wrong.write_text("guess")
    code, _, err = lavalog(capsys, "jobs", "-A", "--server", url, "--token-file", str(wrong))
    assert code == 3 and "check --token-file" in err
