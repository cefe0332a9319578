"""The projections subcommands of `lavalog`, on the recorded examples and the decider's decisions."""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path

import msgspec
import pytest
import yaml

from lavalog.cli.main import main
from lavalog.cli.progress import ProgressBar
from lavalog.controller.broker import free_port
from lavalog.events.codec import encode, read_jsonl, write_jsonl
from lavalog.events.decisions import ActionDecided
from lavalog.projections.service.sources.file import FileSource, read_file
from lavalog.projections.service.store.writer import Store, load
from tests.projections.helpers import decided_examples, snapshot, store_arguments, write_events

#: a recording to serve from (no broker needed), for the tests of the store alone
EXAMPLE = str(Path(__file__).parents[3] / "examples" / "max-retry-exhausted.jsonl")
EXAMPLE_JOBS = {
    "ml/tf-dist": "Completed",
    "ml/flaky-train": "Failed",
    "ml/batch-eval": "Completed",
    "hpc/mpi-allreduce": "Completed",
}


@pytest.fixture(scope="module")
def log(tmp_path_factory):
    return write_events(tmp_path_factory.mktemp("log") / "examples.jsonl", decided_examples())


def lavalog(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_jobs_as_table_json_and_yaml(capsys, log):
    code, out, _ = lavalog(capsys, "jobs", "--file", str(log), "-A")
    assert code == 0
    header, *rows = out.splitlines()
    assert header.split()[:4] == ["NAMESPACE", "NAME", "QUEUE", "PHASE"]
    assert {f"{r.split()[0]}/{r.split()[1]}": r.split()[3] for r in rows} == EXAMPLE_JOBS
    _, out, _ = lavalog(capsys, "jobs", "--file", str(log), "-o", "json", "-n", "ml")
    assert {j["key"]: j["phase"] for j in json.loads(out)} == {
        k: v for k, v in EXAMPLE_JOBS.items() if k.startswith("ml/")
    }
    _, out, _ = lavalog(capsys, "jobs", "--file", str(log), "-A", "-o", "yaml", "--phase", "Failed")
    assert [j["key"] for j in yaml.safe_load(out)] == ["ml/flaky-train"]


def test_timeline_is_readable(capsys, log):
    code, out, _ = lavalog(capsys, "timeline", "ml/tf-dist", "--file", str(log))
    assert code == 0
    phases = out.split("\nphases\n")[1].split("\n\n")[0].splitlines()
    assert [line.split()[1] for line in phases] == [
        "Pending",
        "Running",
        "Restarting",
        "Pending",
        "Running",
        "Completing",
        "Completed",
    ]
    assert "RestartTask on PodFailed (task:worker#0) pod tf-dist-worker-1 exit code 1" in out
    code, out, _ = lavalog(capsys, "timeline", "ml/tf-dist", "--file", str(log), "-o", "json")
    assert json.loads(out)["retry_count"] == 1
    code, _, err = lavalog(capsys, "timeline", "ml/nope", "--file", str(log))
    assert (code, err) == (1, "lavalog timeline: no job ml/nope\n")


def test_events_and_export_give_the_job_log_in_order(capsys, log):
    expected = [e for e in decided_examples() if e.key == "ml/tf-dist"]
    code, out, _ = lavalog(capsys, "events", "ml/tf-dist", "--file", str(log))
    assert code == 0
    assert [line.split()[2] for line in out.splitlines()] == [type(e).__name__ for e in expected]
    code, out, _ = lavalog(capsys, "export", "ml/tf-dist", "--file", str(log))
    assert out.encode() == b"".join(write_jsonl(expected))
    assert list(read_jsonl(out.splitlines())) == expected


def test_audit_passes_then_reports_a_tampered_decision(capsys, log, tmp_path):
    code, out, _ = lavalog(capsys, "audit", "ml/tf-dist", "--file", str(log))
    assert (code, out.split(": ")[-1]) == (0, "consistent\n")
    events = decided_examples()
    target = next(e for e in events if isinstance(e, ActionDecided) and e.key == "ml/tf-dist")
    tampered = [
        msgspec.structs.replace(e, trigger="PodEvicted") if e is target else e for e in events
    ]
    bad = write_events(tmp_path / "tampered.jsonl", tampered)
    code, out, _ = lavalog(capsys, "audit", "ml/tf-dist", "--file", str(bad))
    assert code == 1
    assert out.splitlines()[1:] == [
        f"CHANGED    {target.id}  ActionDecided (cause {target.cause}): "
        "trigger recorded 'PodEvicted', recomputed 'PodFailed'"
    ]
    code, out, _ = lavalog(capsys, "audit", "--file", str(bad), "-o", "json")
    assert (code, len(json.loads(out)["differences"])) == (1, 1)


def test_rebuild_from_a_file_equals_incremental_loading(capsys, log, new_store):
    incremental = Store(new_store("incremental"))
    for item in read_file(log):
        incremental.apply([item])
    rebuilt = new_store("state/projections")
    for _ in range(2):  # the second rebuild replaces the first store
        code, out, err = lavalog(
            capsys, "projections", "rebuild", "--from-file", str(log), *store_arguments(rebuilt)
        )
        assert code == 0, err
        assert err == ""  # no progress bar in a file: only on a terminal
    assert out == f"rebuilt {rebuilt}: {len(decided_examples())} events\n"
    assert snapshot(rebuilt) == snapshot(incremental.location)
    code, out, _ = lavalog(capsys, "jobs", *store_arguments(rebuilt), "-A", "-o", "json")
    assert len(json.loads(out)) == len(EXAMPLE_JOBS)


def test_commands_without_a_store_say_how_to_get_one(capsys, new_store):
    empty = new_store("none/projections")
    code, _, err = lavalog(capsys, "jobs", *store_arguments(empty))
    assert code == 3  # nothing to read
    assert err.startswith(f"lavalog jobs: no projections store at {empty}: ")
    assert "lavalog projections rebuild" in err


def test_a_file_source_resumes_where_the_store_stopped(tmp_path, log):
    store = Store(tmp_path / "s.sqlite")
    items = list(read_file(log))
    load(store, items[:50])
    source = FileSource(log, batch_size=1_000)

    async def drain() -> list[bytes]:
        return [item.raw async for batch in source.batches(store) for item in batch]

    assert asyncio.run(drain()) == [encode(i.event) for i in items[50:]]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(
            ["--limit", "-1"],
            "lavalog jobs: error: argument --limit: expected 1 to 1000, not -1",
            id="negative-limit",
        ),
        pytest.param(
            ["--phase", "Bogus"],
            "lavalog jobs: phase: no phase 'Bogus'; one of Pending, Running, Restarting, "
            "Completing, Completed, Aborting, Aborted, Terminating, Terminated, Failed",
            id="unknown-phase",
        ),
    ],
)
def test_jobs_refuses_what_the_api_refuses(capsys, log, args, message):
    with pytest.raises(SystemExit) as exited:  # argparse's own errors exit
        raise SystemExit(main(["jobs", "--file", str(log), "-A", *args]))
    assert exited.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == message


def test_jobs_phases_may_be_comma_separated(capsys, log):
    code, out, _ = lavalog(capsys, "jobs", "--file", str(log), "-A", "--phase", "Failed,Completed")
    assert code == 0
    assert len(out.splitlines()) == 1 + len(EXAMPLE_JOBS)


def test_read_commands_fail_when_what_was_asked_for_does_not_exist(capsys, log):
    source = ("--file", str(log))
    assert lavalog(capsys, "timeline", "ml/tf-dist", *source, "--incarnation", "9") == (
        1,
        "",
        "lavalog timeline: no incarnation 9 of ml/tf-dist: it has 1\n",
    )
    assert lavalog(capsys, "events", "ml/nope", *source) == (
        1,
        "",
        "lavalog events: no events of ml/nope\n",
    )
    assert lavalog(capsys, "export", "ml/nope", *source)[::2] == (
        1,
        "lavalog export: no events of ml/nope\n",
    )
    assert lavalog(capsys, "audit", "ml/nope", *source)[::2] == (
        2,
        "lavalog audit: no events of ml/nope\n",
    )


@pytest.mark.parametrize(
    "command",
    [
        ["timeline", "ml/tf-dist"],
        ["audit", "ml/tf-dist"],
    ],
)
def test_yaml_output_holds_what_json_output_holds(capsys, log, command):
    code, as_json, _ = lavalog(capsys, *command, "--file", str(log), "-o", "json")
    assert code == 0
    code, as_yaml, _ = lavalog(capsys, *command, "--file", str(log), "-o", "yaml")
    assert code == 0
    assert yaml.safe_load(as_yaml) == json.loads(as_json)


def test_events_as_yaml_are_the_stored_events(capsys, log):
    _, as_json, _ = lavalog(capsys, "events", "ml/tf-dist", "--file", str(log), "-o", "json")
    _, as_yaml, _ = lavalog(capsys, "events", "ml/tf-dist", "--file", str(log), "-o", "yaml")
    assert list(yaml.safe_load_all(as_yaml)) == [json.loads(line) for line in as_json.splitlines()]


def test_replay_as_yaml_is_its_jsonl(capsys):
    recording = "examples/max-retry-exhausted.jsonl"
    _, as_json, _ = lavalog(capsys, "replay", recording, "-o", "json")
    _, as_yaml, _ = lavalog(capsys, "replay", recording, "-o", "yaml")
    assert list(yaml.safe_load_all(as_yaml)) == [json.loads(line) for line in as_json.splitlines()]


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_progress_bar_waits_for_something_to_show():
    screen = Terminal()
    bar = ProgressBar(stream=screen)
    bar.update(0, 0, force=True)  # still connecting: nothing is known
    assert screen.getvalue() == ""
    bar.update(250, 1_000, force=True)
    assert screen.getvalue().startswith(
        "\r[#######.......................]  25.0%  250/1000 events"
    )
    bar.close()
    assert screen.getvalue().endswith("\n")


def test_a_progress_bar_that_never_drew_leaves_no_blank_line():
    screen = Terminal()
    bar = ProgressBar(stream=screen)
    bar.update(0, 0, force=True)
    bar.close()
    assert screen.getvalue() == ""


@pytest.mark.parametrize(
    ("command", "code"),
    [
        (["projections", "serve", "--port", "0", "--from-file", EXAMPLE], 1),
        (["projections", "rebuild", "--from-file", EXAMPLE], 1),
        (["jobs"], 3),
    ],
    ids=["serve", "rebuild", "jobs"],
)
def test_an_unreachable_postgresql_store_is_one_line_without_the_password(capsys, command, code):
    port = free_port()  # nothing listens there
    url = f"postgresql://lavalog:s3cret@127.0.0.1:{port}/history"
    returned, _, err = lavalog(capsys, *command, "--store", url)
    assert returned == code
    assert err.splitlines() == [
        f"lavalog {' '.join(command[:2] if command[0] == 'projections' else command[:1])}: "
        f"cannot reach the projections store at postgresql://lavalog:***@127.0.0.1:{port}/history: "
        f'connection failed: connection to server at "127.0.0.1", port {port} failed: Connection refused'
    ]
