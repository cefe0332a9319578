"""The chaos run: lavalog's promise (nothing lost, nothing done twice) as a measured figure,
and where the API budget goes under churn.

One seeded workload of Volcano Jobs (`chaos_workload`) runs twice against the development
broker, a simulated cluster (`lavalog sim`) and two `lavalog run` replicas, each a process
of its own: once without faults, once with faults (`chaos_faults`): replicas SIGKILLed one
at a time and together, the broker SIGSTOPped, the API server answering 500 and 429 or
slowly, watches dropped and history expired, a node lost, pods evicted, undecodable
messages on `lavalog.observed`. Then the two are compared per job and from the cluster's
own record (`chaos_verdict`), and the figures of each run are printed (`chaos_figures`):
the decision-to-action lag, API calls by verb, resource and purpose, retries, rate-limiter
waits, lane depths.

Outcomes that legitimately depend on timing are left out of the comparison, and counted:
a node loss fails whatever runs on the node at that moment (NodeLost, a PodFailed that the
job's policies act on, or none does and the gang waits for ever, as in Volcano), so the
jobs with a pod on the lost node are not compared; those still unfinished when the faults
end are terminated (`lavalog job terminate`), and all of them are checked for settling,
duplicates (creations alive at once), leftovers and the audit. Evictions are aimed at
running pods of running jobs; no job of the workload has a policy on PodEvicted, so a
replacement pod of the same version changes nothing.

    python bench/chaos.py                       # 300 jobs, the full run (`make chaos`)
    python bench/chaos.py --jobs 40 --seed 7   # the small run `make test` does
    python bench/chaos.py --jobs 1000 --baseline-jobs 200 \
        --kinds plain,restart-job,restart-task,abort --kill-every 15 --fault-every 20 \
        --settle-within 1200                    # churn: 1,000 jobs beside 200, same faults
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Sequence
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

from aiokafka import TopicPartition

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import chaos_workload
from bench.chaos_faults import FAULTS, NODES, Churn, Faults
from bench.chaos_figures import Figures, MetricsFollower, load, print_figures, served_calls
from bench.chaos_lag import read_logs
from bench.chaos_verdict import (
    Outcome,
    Report,
    audit_all,
    compare,
    creations,
    dead_letters,
)
from bench.chaos_workload import (
    FINISHED,
    KINDS,
    Obj,
    Planned,
    View,
    drive,
    phase_of,
    submit,
    workload,
)
from bench.harness import LavalogRun, kafka_settings, run_benchmark, say, simulator_process, table
from lavalog.controller.broker import DevelopmentBroker
from lavalog.controller.kafka import KafkaSettings, create_consumer, ensure_topics, topic_name
from lavalog.controller.kube import connect
from lavalog.controller.task_stacks import log_task_stacks_on_sigusr1
from lavalog.events import topics

DECIDER_GROUP = "lavalog-decider"
REPLICAS = ("chaos-a", "chaos-b")
NO_CHURN = Churn()

__all__ = ["FAULTS", "chaos", "print_report"]


async def run(
    broker: DevelopmentBroker,
    jobs: list[Planned],
    *,
    seed: int,
    faults: int,
    pause_seconds: float,
    settle_within: float,
    time_scale: float,
    submit_every: float,
    output: Path,
    churn: Churn = NO_CHURN,
    replica_args: Sequence[str] = (),
    label: str = "",
) -> Outcome:
    """The workload once, with `faults` random faults or the `churn` schedule (neither: the
    reference run)."""
    kafka = kafka_settings(broker.bootstrap_servers, 3, prefix=f"chaos-{uuid.uuid4().hex[:8]}.")
    await ensure_topics(kafka)
    chaos_workload.OWN_CALLS.clear()
    faulty = bool(faults or churn)
    async with AsyncExitStack() as stack:
        cluster = await stack.enter_async_context(
            simulator_process(
                nodes=NODES, pods_per_node=110, time_scale=time_scale, history=100_000
            )
        )
        kube = await stack.enter_async_context(connect(str(cluster.kubeconfig)))
        replicas = [
            LavalogRun(kafka, cluster.kubeconfig, output / f"{name}.log", name, replica_args)
            for name in REPLICAS
        ]
        for replica in replicas:
            stack.push_async_callback(replica.stop)
            await replica.start()
        for replica in replicas:
            await replica.ready()
        view = View(kube)
        await view.refresh()
        metrics = MetricsFollower(replicas)
        # listing every job and pod costs the API server: less often for many jobs
        background = [
            asyncio.create_task(view.follow(max(0.25, len(jobs) / 1000))),
            asyncio.create_task(metrics.follow()),
        ]
        chaos = Faults(
            cluster, kube, view, broker.pid or 0, replicas, kafka,
            random.Random(seed * 7919 + 1), {p.name: p for p in jobs}, pause_seconds,
        )  # fmt: skip
        names = [p.name for p in jobs]
        load_before, started = load(), time.time()
        try:
            background += [asyncio.create_task(drive(kube, view, p)) for p in jobs]
            submitted, finished = asyncio.Event(), asyncio.Event()
            injecting = asyncio.create_task(
                chaos.churn(churn, finished) if churn else chaos.inject(faults, submitted)
            )
            for planned in jobs:
                await submit(kube, planned)
                await asyncio.sleep(submit_every)
            submitted.set()
            settled = True
            if churn:  # faults go on until every job has finished (or the time is up)
                settled = await settle(view, kafka, names, settle_within)
                seconds = time.time() - started
                finished.set()
            await injecting
            await chaos.revive()
            await chaos.end_node_loss_victims()
            calm = time.monotonic()
            if settled:  # after the churn only what the last faults left, else for good
                settled = await settle(view, kafka, names, settle_within)
            settle_seconds = time.monotonic() - calm
            if not churn:
                seconds = time.time() - started
            if not settled:  # the evidence of a stall: where each replica's tasks wait
                for replica in replicas:
                    replica.log_task_stacks()
                await asyncio.sleep(1.0)
        finally:
            for task_ in background:
                task_.cancel()
            await asyncio.gather(*background, return_exceptions=True)
        say(f"chaos: {'settled' if settled else 'NOT settled'}; collecting the evidence")
        created = await creations(cluster)
        await view.refresh()
        logged = read_logs((r.output for r in replicas), since=started)
        figures = Figures(
            label=label or ("faults" if faulty else "no faults"),
            jobs=len(jobs),
            started=started,
            seconds=seconds,
            unfinished=sum(1 for n in names if view.phase(n) not in FINISHED),
            load_before=load_before,
            load_after=load(),
            actions=logged.actions,
            decided=logged.decided,
            kills=chaos.kills,
            served=await served_calls(cluster, chaos_workload.OWN_CALLS),
            metrics=metrics,
        )
        outcome = Outcome(
            jobs={
                p.name: (view.phase(p.name), retry_count(view.jobs.get(p.name)))
                if view.phase(p.name) in FINISHED
                else ("", 0)
                for p in jobs
            },
            created=created,
            left_running=await view.left_for_finished_jobs(),
            settle_seconds=settle_seconds,
            settled=settled,
            stuck={
                p.name: where_stuck(view.jobs.get(p.name))
                for p in jobs
                if view.phase(p.name) not in FINISHED
            },
            letters=await dead_letters(kafka),
            audit=await audit_all(kafka, say),
            faults=chaos if faulty else None,
            figures=figures,
        )
    return outcome


def where_stuck(job: Obj | None) -> str:
    """An unfinished job's phase and version, as a lost transition's evidence."""
    status = (job or {}).get("status") or {}
    phase = phase_of(job)
    return f"{phase} v{status.get('version', 0)}" if phase else "no status"


def retry_count(job: Obj | None) -> int:
    return int(((job or {}).get("status") or {}).get("retryCount", 0))


async def settle(view: View, kafka: KafkaSettings, names: list[str], within: float) -> bool:
    """Until every job has finished, nothing runs for it and the deciders have read all of
    `lavalog.observed`; False if that does not happen `within` seconds."""

    def finished() -> bool:
        return all(view.phase(n) in FINISHED for n in names) and not view.pods_left()

    try:
        async with asyncio.timeout(within):
            while True:
                await view.until(finished)
                if await decider_caught_up(kafka):
                    await view.refresh()
                    if finished() and not await view.left_for_finished_jobs():
                        return True
                await asyncio.sleep(0.5)
    except TimeoutError:
        return False


async def decider_caught_up(kafka: KafkaSettings) -> bool:
    """The decider group has committed every message of `lavalog.observed`."""
    consumer = create_consumer(kafka, group_id=DECIDER_GROUP)
    await consumer.start()
    try:
        name = topic_name(kafka, topics.OBSERVED)
        parts = [TopicPartition(name, p) for p in range(kafka.observed_partitions)]
        ends = await consumer.end_offsets(parts)
        committed = [await consumer.committed(tp) or 0 for tp in parts]
        return all(done >= ends[tp] for tp, done in zip(parts, committed, strict=True))
    finally:
        await consumer.stop()


async def chaos(
    *,
    seed: int,
    jobs: int,
    faults: int,
    pause_seconds: float = 10.0,
    settle_within: float = 240.0,
    time_scale: float = 50.0,
    submit_every: float = 0.3,
    output_dir: Path | None = None,
    kinds: Sequence[str] = KINDS,
    churn: Churn = NO_CHURN,
    replica_args: Sequence[str] = (),
    reference: bool = True,
) -> Report:
    """The workload without faults (unless not `reference`), then with them, and the
    comparison."""
    log_task_stacks_on_sigusr1()  # `kill -USR1` this run: where each of its tasks waits
    planned = workload(seed, jobs, kinds)
    with tempfile.TemporaryDirectory(prefix="lavalog-chaos-") as scratch:
        logs = output_dir or Path(scratch)
        async with DevelopmentBroker(log_path=logs / "broker.log") as broker:
            common: dict[str, Any] = dict(
                seed=seed, pause_seconds=pause_seconds, settle_within=settle_within,
                time_scale=time_scale, submit_every=submit_every, replica_args=replica_args,
            )  # fmt: skip
            without = None
            if reference:
                say(f"chaos: seed {seed}, {jobs} jobs, reference run without faults ({load()})")
                without = await run(
                    broker, planned, faults=0, output=folder(logs, "reference"),
                    label=f"{jobs} jobs, no faults", **common,
                )  # fmt: skip
            what = f"churn {churn}" if churn else f"{faults} faults"
            say(f"chaos: the same {jobs} jobs with {what} ({load()})")
            chaotic = await run(
                broker, planned, faults=faults, output=folder(logs, "chaos"), churn=churn,
                label=f"{jobs} jobs, faults", **common,
            )  # fmt: skip
    return Report(planned, without, chaotic, compare(without, chaotic))


def folder(parent: Path, name: str) -> Path:
    """Where one run's controllers write their output."""
    path = parent / name
    path.mkdir(parents=True, exist_ok=True)
    return path


def print_report(report: Report) -> None:
    faults = report.chaotic.faults
    assert faults is not None
    verdict = report.verdict
    kinds = Counter(p.kind for p in report.planned)
    table(["job kind", "jobs"], [[k, str(n)] for k, n in sorted(kinds.items())])
    done = sorted(faults.done.items())
    table(["fault", "times"], [[k, str(n)] for k, n in done])
    recorded, reproduced, audited, consistent = report.chaotic.audit
    reference = report.reference
    rows = [
        ("jobs", str(len(report.planned))),
        ("faults injected", str(sum(faults.done.values()))),
        (
            "settle time without faults (s)",
            f"{reference.settle_seconds:.1f}" if reference is not None else "-",
        ),
        ("settle time after the last fault (s)", f"{report.chaotic.settle_seconds:.1f}"),
        ("jobs compared (phase, retryCount)", str(verdict.compared)),
        ("jobs hit by a node loss (not compared)", str(verdict.timing_dependent)),
        ("  of them terminated once the faults ended", str(len(faults.terminated))),
        ("pods evicted or lost", str(sum(faults.removed.values()))),
        ("lost transitions", str(len(verdict.lost))),
        ("duplicate pods", str(len(verdict.duplicates))),
        ("pods or PodGroups left for finished jobs", str(len(verdict.left_running))),
        ("dead letters (all poison sent)", f"{len(report.chaotic.letters)} ({len(faults.poison)})"),
        ("unaccounted dead letters", str(len(verdict.unaccounted_letters))),
        ("replicas that exited unkilled", str(len(verdict.died))),
        ("decisions reproduced by audit", f"{reproduced}/{recorded} ({report.audit_share:.1f}%)"),
        ("jobs audited consistent", f"{consistent}/{audited}"),
    ]
    table(["chaos run", "value"], [list(r) for r in rows])
    for line in [
        *verdict.lost,
        *verdict.duplicates,
        *verdict.left_running,
        *verdict.unaccounted_letters,
        *verdict.died,
    ]:
        say(f"  {line}")
    say("\nchaos: " + ("PASS" if report.ok else "FAIL"))


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=300)
    parser.add_argument(
        "--baseline-jobs",
        type=int,
        default=0,
        help="first run this many jobs the same way, and print the figures side by side",
    )
    parser.add_argument(
        "--kinds", default=",".join(KINDS), help=f"job kinds to draw from (of {','.join(KINDS)})"
    )
    parser.add_argument("--faults", type=int, default=30, help="at least this many random faults")
    parser.add_argument(
        "--kill-every",
        type=float,
        default=0,
        help="churn: SIGKILL a replica about every this many seconds until every job has "
        "finished (instead of the random faults)",
    )
    parser.add_argument(
        "--fault-every",
        type=float,
        default=0,
        help="churn: a cluster fault (watch drop, history expired, 500s, 429s, latency) about "
        "every this many seconds until every job has finished",
    )
    parser.add_argument(
        "--new-identity-every",
        type=int,
        default=5,
        help="churn: every this many kills, the replica comes back under a new identity",
    )
    parser.add_argument(
        "--submit-every", type=float, default=0.3, help="seconds between two submissions"
    )
    parser.add_argument("--pause", type=float, default=10.0, help="seconds the broker is stopped")
    parser.add_argument(
        "--settle-within",
        type=float,
        default=240.0,
        help="seconds the jobs may take to finish (after the last fault; churn: from the first "
        "submission)",
    )
    parser.add_argument("--kube-api-qps", type=float, help="the replicas' API budget")
    parser.add_argument("--kube-api-burst", type=int)
    parser.add_argument(
        "--no-reference",
        action="store_true",
        help="skip the run without faults (figures only: nothing to compare with)",
    )
    parser.add_argument("--logs", type=Path, help="keep the controllers' output here")
    args = parser.parse_args()
    kinds = [k for k in args.kinds.split(",") if k]
    unknown = set(kinds) - set(KINDS)
    if unknown:
        parser.error(f"unknown kinds {sorted(unknown)}")
    replica_args: list[str] = []
    if args.kube_api_qps:
        replica_args += ["--kube-api-qps", str(args.kube_api_qps)]
    if args.kube_api_burst:
        replica_args += ["--kube-api-burst", str(args.kube_api_burst)]
    churn = Churn(args.kill_every, args.fault_every, args.new_identity_every)
    sizes = [n for n in (args.baseline_jobs, args.jobs) if n]
    reports = []
    for size in sizes:
        logs = args.logs / f"{size}-jobs" if args.logs else None
        if logs:
            logs.mkdir(parents=True, exist_ok=True)
        report = run_benchmark(
            chaos(
                seed=args.seed, jobs=size, faults=0 if churn else args.faults,
                pause_seconds=args.pause, settle_within=args.settle_within,
                submit_every=args.submit_every, output_dir=logs, kinds=kinds, churn=churn,
                replica_args=replica_args, reference=not args.no_reference,
            )
        )  # fmt: skip
        print_report(report)
        reports.append(report)
    print_figures(
        [
            outcome.figures
            for report in reports
            for outcome in (report.reference, report.chaotic)
            if outcome is not None and outcome.figures is not None
        ]
    )
    return 0 if all(report.ok for report in reports) else 1


if __name__ == "__main__":
    sys.exit(main())
