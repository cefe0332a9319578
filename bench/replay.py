"""Projections rebuild: 1,000,000 events of 10,000 jobs, from a file and through the broker.

    python bench/replay.py [--events 1000000] [--jobs 10000] [--active 1000] [--no-broker]
                           [--no-postgres]

The log is what the controller writes: the observations of `bench/decider.py`'s job
lifecycles (ps/worker jobs whose workers fail and restart) with the decisions the real
decider makes of them, `--active` jobs interleaved at a time. Each measurement runs in a
fresh process so that its peak memory (max RSS) is its own; a rebuild's peak adds that of
the store's writer process (its child) to its own. Baselines from the same run: reading
and decoding the file (msgspec) and, for the broker, consuming the topics with aiokafka
without decoding. Target (docs/benchmarks.md): a rebuild from the file in < 10 s, peak < 400 MB.

The file is also rebuilt into PostgreSQL (`--store postgresql://...`), beside SQLite's
figure: a throwaway server of the system's (`bench/postgres.py`) on this machine, so it
shares the cores; its memory is not in the peak (it is not a child of the rebuild).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.decider import job_lifecycle
from lavalog.controller.decider.core import replay
from lavalog.controller.kafka import KafkaSettings, create_consumer, create_producer, topic_name
from lavalog.events.codec import LogEvent, decode_event, decode_observation, encode
from lavalog.events.observations import Observation
from lavalog.events.topics import DECISIONS, OBSERVED
from lavalog.projections.service.rebuild import BATCH, CountedSource, rebuild
from lavalog.projections.service.sources.file import FileSource, read_file
from lavalog.projections.service.sources.kafka import KafkaSource
from lavalog.projections.service.store.database import Location
from lavalog.projections.service.store.locations import location_of
from lavalog.projections.service.store.sqlite import SqliteLocation
from lavalog.projections.service.store.writer import Store, load

#: observations per job that, with their decisions, make about 100 events
OBSERVATIONS_PER_JOB = 46


def job_log(index: int) -> list[bytes]:
    observations = [decode_observation(m) for m in job_lifecycle(index, OBSERVATIONS_PER_JOB)]
    return [encode(e) for o, decisions in replay(observations) for e in (o, *decisions)]


def generate(path: Path, *, events: int, jobs: int, active: int) -> int:
    """Write the log: waves of `active` jobs, round-robin within a wave; returns its length."""
    written = 0
    with path.open("wb") as out:
        for wave in range(0, jobs, active):
            logs = [job_log(index) for index in range(wave, min(wave + active, jobs))]
            for message in itertools.chain.from_iterable(itertools.zip_longest(*logs)):
                if message is not None and written < events:
                    out.write(message + b"\n")
                    written += 1
    return written


def generated_store(directory: Path, *, jobs: int) -> tuple[Path, int]:
    """A projections store in `directory` loaded with `jobs` generated jobs (about 100
    events each, 1,000 interleaved); its path and the number of events."""
    log, db = directory / "log.jsonl", directory / "projections.sqlite"
    events = generate(log, events=jobs * 100, jobs=jobs, active=1000)
    store = Store(db)
    load(store, read_file(log))
    store.close()
    return db, events


def peak_mb() -> float:
    """This process's peak RSS plus the largest of its finished children's (the store's
    writer process): an upper bound of what both held at once."""
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return (own + children) / 1024


# --- measurements, each run in its own process ----------------------------------------


def measure_decode(path: Path) -> dict[str, Any]:
    started = time.perf_counter()
    count = 0
    with path.open("rb") as lines:
        for line in lines:
            decode_event(line)
            count += 1
    return {"events": count, "seconds": time.perf_counter() - started, "peak_mb": peak_mb()}


def measure_rebuild(location: Location, source: CountedSource) -> dict[str, Any]:
    """What `lavalog projections rebuild` does, without its progress bar."""
    store = Store(location, durable=False)
    started = time.perf_counter()
    applied = asyncio.run(rebuild(store, source))
    store.close()
    return {"events": applied, "seconds": time.perf_counter() - started, "peak_mb": peak_mb()}


async def _consume_raw(settings: KafkaSettings, count: int) -> dict[str, Any]:
    consumer = create_consumer(settings, group_id=None, max_poll_records=10_000)
    consumer.subscribe([topic_name(settings, OBSERVED), topic_name(settings, DECISIONS)])
    await consumer.start()
    started = time.perf_counter()
    seen = 0
    try:
        while seen < count:
            for messages in (await consumer.getmany(timeout_ms=500)).values():
                seen += len(messages)
    finally:
        await consumer.stop()
    return {"events": seen, "seconds": time.perf_counter() - started, "peak_mb": peak_mb()}


async def _produce(settings: KafkaSettings, path: Path) -> dict[str, Any]:
    started = time.perf_counter()
    count = 0
    async with create_producer(settings) as producer:
        pending = []
        with path.open("rb") as lines:
            for line in lines:
                raw = line.rstrip(b"\n")
                event: LogEvent = decode_event(raw)
                topic = OBSERVED if isinstance(event, Observation) else DECISIONS
                pending.append(
                    await producer.send(topic_name(settings, topic), raw, key=event.key.encode())
                )
                count += 1
                if len(pending) >= 20_000:
                    await asyncio.gather(*pending)
                    pending.clear()
        await asyncio.gather(*pending)
    return {"events": count, "seconds": time.perf_counter() - started, "peak_mb": peak_mb()}


def run_phase(phase: str, args: list[str]) -> dict[str, Any]:
    """One measurement in a fresh interpreter; it prints its figures as JSON."""
    output = subprocess.run(
        [sys.executable, __file__, "--phase", phase, *args],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    result: dict[str, Any] = json.loads(output.strip().splitlines()[-1])
    return result


def phase_main(phase: str, rest: list[str]) -> dict[str, Any]:
    if phase == "decode":
        return measure_decode(Path(rest[0]))
    if phase == "rebuild-file":
        return measure_rebuild(location_of(rest[1]), FileSource(Path(rest[0]), batch_size=BATCH))
    settings = KafkaSettings(bootstrap_servers=rest[0], topic_prefix=rest[1])
    if phase == "produce":
        return asyncio.run(_produce(settings, Path(rest[2])))
    if phase == "consume-raw":
        return asyncio.run(_consume_raw(settings, int(rest[2])))
    if phase == "rebuild-broker":
        source = KafkaSource(settings, group_id=None, until_end=True, max_records=BATCH)
        return measure_rebuild(SqliteLocation(Path(rest[2]) / "projections.sqlite"), source)
    raise SystemExit(f"unknown phase {phase}")


def report(name: str, figures: dict[str, Any], *, baseline: dict[str, Any] | None = None) -> None:
    rate = figures["events"] / figures["seconds"]
    line = (
        f"{name:<34} {figures['events']:>9,} events  {figures['seconds']:>7.2f} s"
        f"  {rate:>10,.0f} events/s  peak {figures['peak_mb']:>6.0f} MB"
    )
    if baseline is not None:
        line += f"  ({rate / (baseline['events'] / baseline['seconds']):.0%} of baseline)"
    print(line, flush=True)


def broker_figures(path: Path, count: int, work: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    from lavalog.controller.broker import DevelopmentBroker

    with DevelopmentBroker() as broker:
        settings = KafkaSettings(bootstrap_servers=broker.bootstrap_servers, topic_prefix="bench.")
        from lavalog.controller.kafka import ensure_topics

        asyncio.run(ensure_topics(settings))
        common = [broker.bootstrap_servers, settings.topic_prefix]
        yield "produce (setup, aiokafka)", run_phase("produce", [*common, str(path)])
        yield "baseline: raw aiokafka consume", run_phase("consume-raw", [*common, str(count)])
        (work / "broker").mkdir()
        yield (
            "rebuild from the broker",
            run_phase("rebuild-broker", [*common, str(work / "broker")]),
        )


def postgres_figure(path: Path, decode: dict[str, Any]) -> None:
    """The file rebuilt into PostgreSQL, or why there is no figure."""
    from bench.postgres import PostgresUnavailable, TemporaryPostgres

    try:
        server = TemporaryPostgres()
    except PostgresUnavailable as exc:
        print(f"{'rebuild from the file, PostgreSQL':<34} skipped: {exc}", flush=True)
        return
    with server:
        figures = run_phase("rebuild-file", [str(path), server.new_database("bench")])
    report("rebuild from the file, PostgreSQL", figures, baseline=decode)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--active", type=int, default=1_000, help="jobs interleaved at a time")
    parser.add_argument("--no-broker", action="store_true", help="no rebuild from the broker")
    parser.add_argument("--no-postgres", action="store_true", help="no rebuild into PostgreSQL")
    parser.add_argument("--phase", help=argparse.SUPPRESS)
    args, rest = parser.parse_known_args()
    if args.phase:
        print(json.dumps(phase_main(args.phase, rest)))
        return
    with tempfile.TemporaryDirectory(prefix="lavalog-bench-") as scratch:
        work = Path(scratch)
        path = work / "log.jsonl"
        started = time.perf_counter()
        count = generate(path, events=args.events, jobs=args.jobs, active=args.active)
        size = path.stat().st_size / 1e6
        print(
            f"generated {count:,} events of {args.jobs:,} jobs ({size:,.0f} MB) "
            f"in {time.perf_counter() - started:.1f} s",
            flush=True,
        )
        decode = run_phase("decode", [str(path)])
        report("baseline: read + msgspec decode", decode)
        report(
            "rebuild from the file",
            run_phase("rebuild-file", [str(path), str(work / "file" / "projections.sqlite")]),
            baseline=decode,
        )
        if not args.no_postgres:
            postgres_figure(path, decode)
        print("target: rebuild from the file in < 10 s, peak < 400 MB")
        if not args.no_broker:
            figures = dict(broker_figures(path, count, work))
            for name, result in figures.items():
                baseline = figures["baseline: raw aiokafka consume"] if "rebuild" in name else None
                report(name, result, baseline=baseline)


if __name__ == "__main__":
    main()
