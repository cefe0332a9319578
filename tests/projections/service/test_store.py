"""The store, on SQLite and on PostgreSQL: idempotent batches, positions in the transaction, retention, incarnations."""

from __future__ import annotations

import sqlite3

import msgspec
import pytest

from lavalog.events.observations import JobObserved
from lavalog.projections.core.feed import Position, Sourced
from lavalog.projections.core.fold import new_history, record
from lavalog.projections.core.timeline import build_timeline
from lavalog.projections.service.sources.file import file_source, read_file
from lavalog.projections.service.store.queries import _SORT, Queries
from lavalog.projections.service.store.sqlite import SqliteLocation
from lavalog.projections.service.store.tables import Tables
from lavalog.projections.service.store.tables_process import TablesProcess, WriterFailed
from lavalog.projections.service.store.writer import Store, load
from tests.projections.core.test_timeline import interleave
from tests.projections.helpers import failing_job, recorded, snapshot, tf_job, write_events


class Crash(Exception):
    pass


@pytest.fixture
def log_file(tmp_path):
    events = interleave(tf_job().log, 1) + interleave(failing_job().log, 2)
    return write_events(tmp_path / "log.jsonl", events)


def test_stored_timeline_is_the_folded_one(new_store, log_file):
    store = Store(new_store("s"))
    load(store, read_file(log_file), batch_size=7)
    queries = Queries(store.location)
    expected = new_history(tf_job().log[0])
    for event in tf_job().log:
        record(expected, event)
    assert msgspec.json.encode(queries.timeline("team-a/tf-mnist")) == msgspec.json.encode(
        build_timeline(expected)
    )
    assert queries.timeline("team-a/nope") is None


def test_a_duplicate_is_a_no_op(new_store, log_file):
    store = Store(new_store("s"))
    items = list(read_file(log_file))
    assert load(store, items) == len(items)
    before = snapshot(store.location)
    again = [Sourced(i.event, i.raw, Position("replayed", 0, n)) for n, i in enumerate(items)]
    assert store.apply(again) == []
    assert snapshot(store.location) == before


def test_a_crash_between_write_and_commit_neither_loses_nor_doubles(new_store, log_file):
    clean = Store(new_store("clean"))
    load(clean, read_file(log_file), batch_size=10)

    commits = 0

    def crash_on_third_commit() -> None:
        nonlocal commits
        commits += 1
        if commits == 3:
            raise Crash

    crashing_location = new_store("crash")
    crashing = Store(crashing_location, before_commit=crash_on_third_commit)
    with pytest.raises(Crash):
        load(crashing, read_file(log_file), batch_size=10)
    crashing.close()

    resumed = Store(crashing_location)
    start = resumed.positions(file_source(log_file))[0]
    assert start == 20  # two batches of ten lines committed, the third rolled back
    load(resumed, read_file(log_file, start=start), batch_size=10)
    assert snapshot(resumed.location) == snapshot(clean.location)


def test_a_rolled_back_batch_leaves_no_trace_in_memory(new_store, log_file):
    fail = True

    def maybe_crash() -> None:
        if fail:
            raise Crash

    store = Store(new_store("s"), before_commit=maybe_crash)
    items = list(read_file(log_file))
    with pytest.raises(Crash):
        store.apply(items[:30])
    fail = False
    load(store, items)
    clean = Store(new_store("clean"))
    load(clean, items)
    assert snapshot(store.location) == snapshot(clean.location)


def test_incarnations_of_a_reused_name_are_kept_apart(new_store, tmp_path):
    first = tf_job(uid="u-1", start=1000.0)
    second = recorded("team-a/tf-mnist", "u-2", start=5000.0)
    second.observe(JobObserved, spec={"queue": "other", "tasks": []})
    path = write_events(tmp_path / "log.jsonl", first.log + second.log)
    store = Store(new_store("s"))
    load(store, read_file(path))
    queries = Queries(store.location)
    assert [(j.uid, j.incarnation, j.queue) for j in queries.incarnations("team-a/tf-mnist")] == [
        ("u-1", 1, "research"),
        ("u-2", 2, "other"),
    ]
    latest = queries.timeline("team-a/tf-mnist")
    oldest = queries.timeline("team-a/tf-mnist", incarnation=1)
    assert latest is not None and oldest is not None
    assert (latest.uid, oldest.uid, oldest.phase) == ("u-2", "u-1", "Completed")
    assert {e.seq for e in queries.events("team-a/tf-mnist", uid="u-2")} < {
        e.seq for e in queries.events("team-a/tf-mnist")
    }


def test_retention_forgets_finished_jobs_and_their_late_events(new_store, tmp_path):
    done = tf_job(start=1000.0)  # Completed at 1102
    later = failing_job(start=2000.0)  # events up to 2021
    store = Store(new_store("s"), retention=500.0)
    path = write_events(tmp_path / "log.jsonl", done.log + later.log)
    load(store, read_file(path))
    queries = Queries(store.location)
    assert [j.key for j in queries.incarnations("team-a/tf-mnist")] == []
    assert [j.key for j in queries.incarnations("team-b/mpi-run")] == ["team-b/mpi-run"]
    late = done.at(2500.0)
    late.observe(JobObserved, spec={}, deleting=True)
    assert store.apply(list(read_file(write_events(tmp_path / "late.jsonl", late.log[-1:])))) == []
    assert queries.events("team-a/tf-mnist") == []


def test_positions_are_per_source_and_partition(new_store, log_file):
    store = Store(new_store("s"))
    items = list(read_file(log_file))
    store.apply(
        [Sourced(i.event, i.raw, Position("topic-a", n % 2, n)) for n, i in enumerate(items)]
    )
    last_even = max(n for n in range(len(items)) if n % 2 == 0)
    last_odd = max(n for n in range(len(items)) if n % 2 == 1)
    assert store.positions("topic-a") == {0: last_even + 1, 1: last_odd + 1}
    assert store.positions("topic-b") == {}


def test_a_bulk_load_equals_an_incremental_one(new_store, tmp_path):
    """A bulk load (a rebuild's store) writes job rows late and its SQL in a child process:
    duplicates within and across batches, histories that leave memory between batches
    and come back, and a name reused while its first incarnation still gets events must
    all end as in a store fed one event at a time."""
    first = tf_job(uid="u-1", start=1000.0)  # Completed at 1102
    other = failing_job(start=1000.0)
    second = recorded("team-a/tf-mnist", "u-2", start=1200.0)
    second.observe(JobObserved, spec={"queue": "other", "tasks": []})
    events = interleave(first.log + other.log, 3)
    events[20:20] = second.log  # while u-1 still gets events
    first.at(1300.0).observe(JobObserved, spec={}, deleting=True)  # late, u-1 left memory
    items = list(read_file(write_events(tmp_path / "log.jsonl", [*events, first.log[-1]])))
    fed = [*items[:40], items[3], *items[30:]]  # one duplicate within a batch, ten across
    incremental = Store(new_store("incremental"))
    for item in fed:
        incremental.apply([item])
    bulk = Store(new_store("bulk"), durable=False)
    assert load(bulk, fed, batch_size=7) == len(items)
    bulk.close()
    assert snapshot(bulk.location) == snapshot(incremental.location)
    assert [
        (j.uid, j.incarnation) for j in Queries(bulk.location).incarnations("team-a/tf-mnist")
    ] == [
        ("u-1", 1),
        ("u-2", 2),
    ]


def test_no_method_of_tables_runs_in_the_parent_of_a_bulk_load():
    """The proxy is derived from Tables: a method added there is a message too, never
    the parent's own SQL on a connection it does not have."""
    public = [name for name in vars(Tables) if not name.startswith("_")]
    assert public
    assert [name for name in public if getattr(TablesProcess, name) is getattr(Tables, name)] == []


def test_the_child_answers_in_the_types_tables_declares(new_store, log_file):
    items = list(read_file(log_file))
    store = Store(new_store("bulk"), durable=False)
    store.apply(items)
    writer = store._tables
    assert isinstance(writer, TablesProcess)
    assert writer.positions(file_source(log_file)) == [(0, items[-1].position.offset + 1)]
    assert writer.positions("nope") == []
    assert sorted(writer.job_uids()) == sorted({item.event.job_uid for item in items})
    log_time = writer.log_time()
    assert isinstance(log_time, float) and log_time > 0
    assert writer.stored_history("no-such-uid") is None
    store.close()


def test_a_bulk_load_whose_writer_dies_fails_and_stays_failed(new_store, log_file):
    items = list(read_file(log_file))
    store = Store(new_store("bulk"), durable=False)
    store.apply(items[:10])
    writer = store._tables
    assert isinstance(writer, TablesProcess)
    writer._process.kill()  # as the OOM killer would
    with pytest.raises(WriterFailed, match=r"died|exited"):
        store.apply(items[10:20])
    with pytest.raises(RuntimeError, match="thrown away"):
        store.apply(items[20:])
    store.close()  # returns: nothing more to write


def test_a_bulk_load_that_fails_is_given_up_without_waiting_for_its_writer(new_store, log_file):
    def crash() -> None:
        raise Crash

    items = list(read_file(log_file))
    store = Store(new_store("bulk"), durable=False, before_commit=crash)
    writer = store._tables
    assert isinstance(writer, TablesProcess)
    with pytest.raises(Crash):
        store.apply(items)
    with pytest.raises(RuntimeError, match="thrown away"):
        store.apply(items)
    store.close()
    assert writer._process.poll() is not None  # the writer process is gone


@pytest.mark.parametrize(
    ("question", "index"),
    [
        ("SELECT MAX(updated) FROM jobs", "jobs_by_updated"),  # the log's "now"
        ("SELECT COUNT(*) FROM jobs WHERE phase IN ('Running', 'Failed')", "jobs_by_phase_reason"),
        ("SELECT phase, COUNT(*) FROM jobs GROUP BY phase", "jobs_by_phase_reason"),
        ("SELECT queue, phase, COUNT(*) FROM jobs GROUP BY queue, phase", "jobs_by_phase_reason"),
        ("SELECT namespace, COUNT(*) FROM jobs GROUP BY namespace", "jobs_by_namespace"),
        (f"SELECT uid FROM jobs ORDER BY {_SORT} DESC, uid DESC LIMIT 101", "jobs_list"),
    ],
)
def test_what_every_page_asks_is_read_from_an_index_not_every_jobs_row(
    tmp_path, log_file, question, index
):
    """A job page asks the log's "now"; the list its page, its total and its filters'
    counts. Each job's row holds its folded history: a scan of them took 40-90 ms per
    question at 10,000 jobs (bench/job_pages.py), an index under 4 ms."""
    store = Store(tmp_path / "s.sqlite")
    load(store, read_file(log_file))
    store.close()
    with sqlite3.connect(tmp_path / "s.sqlite") as db:
        plan = " ".join(row[-1] for row in db.execute(f"EXPLAIN QUERY PLAN {question}"))
    assert f"USING COVERING INDEX {index}" in plan or f"USING INDEX {index}" in plan
    latest = max(item.event.time for item in read_file(log_file))
    assert Queries(SqliteLocation(tmp_path / "s.sqlite")).log_time() == latest


def _many_jobs(tmp_path, count: int):
    """`count` jobs, nearly all Completed (a store's usual shape), a few Aborted."""
    logs = [
        tf_job(key=f"team-{i % 7}/tf-{i}", uid=f"u-{i}", start=1000.0 + i).log
        for i in range(count - 20)
    ] + [failing_job(key=f"team-b/mpi-{i}", uid=f"m-{i}", start=900.0 + i).log for i in range(20)]
    return write_events(tmp_path / "many.jsonl", [event for log in logs for event in log])


@pytest.mark.parametrize("durable", [True, False], ids=["live", "bulk load"])
@pytest.mark.parametrize(
    ("question", "index"),
    [  # the list's page filtered by a common phase, by a search; a namespace's failures
        (
            f"SELECT uid FROM jobs WHERE phase IN ('Completed', 'Running')"
            f" ORDER BY {_SORT} DESC, uid DESC LIMIT 101",
            "INDEX jobs_list",
        ),
        (
            f"SELECT uid FROM jobs WHERE key LIKE '%tf-99%' ORDER BY {_SORT} DESC, uid DESC"
            " LIMIT 101",
            "INDEX jobs_list",
        ),
        (
            "SELECT reason FROM pod_failures WHERE job_uid IN"
            " (SELECT uid FROM jobs WHERE namespace = 'team-b')",
            "COVERING INDEX jobs_by_namespace",
        ),
        (  # the counts' top reasons: of the failed jobs, of every pod failure
            "SELECT reason, COUNT(*) FROM jobs WHERE phase IN ('Failed', 'Aborted', 'Terminated')"
            " GROUP BY reason",
            "COVERING INDEX jobs_by_phase_reason",
        ),
        (
            "SELECT reason, COUNT(*) FROM pod_failures GROUP BY reason",
            "COVERING INDEX pod_failures_by_reason",
        ),
    ],
)
def test_filtered_pages_walk_the_list_index_with_the_planner_measuring_the_jobs(
    tmp_path, durable, question, index
):
    """Without statistics SQLite takes a phase for selective and reads every Completed job's
    row to sort them (150 ms at 10,000 jobs, bench/job_pages.py); a search or a namespace's
    failures read every row (80-110 ms). The store measures the jobs as they double, and
    the list's index carries the filtered columns, so each is a walk of small entries."""
    path = tmp_path / "s.sqlite"
    store = Store(path, durable=durable)
    load(store, read_file(_many_jobs(tmp_path, 1_200)), batch_size=500)
    store.close()
    with sqlite3.connect(path) as db:
        measured = dict(db.execute("SELECT idx, stat FROM sqlite_stat1 WHERE tbl = 'jobs'"))
        plan = " ".join(row[-1] for row in db.execute(f"EXPLAIN QUERY PLAN {question}"))
    assert int(measured["jobs_by_phase_reason"].split()[0]) >= 1_000  # measured as the jobs came
    assert f"USING {index}" in plan, plan
