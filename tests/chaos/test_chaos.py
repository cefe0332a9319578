"""The small chaos run (`bench/chaos.py` with 40 jobs): the same seeded jobs without and
with faults of every kind end alike, no pod is made twice, nothing runs for a finished
job, every dead letter is one of the poison messages sent, and the audit reproduces
every recorded decision. `make chaos` runs the full one (300 jobs)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.chaos import FAULTS, chaos, print_report

#: two runs of the workload, each bounded by its own waits (readiness 30 s, settling
#: 90 s): ~75 s alone on 2 cores, up to twice that beside another suite, where the
#: global 120 s stopped it halfway
pytestmark = [pytest.mark.integration, pytest.mark.timeout(360)]

JOBS = 40


async def test_faults_of_every_kind_lose_nothing_and_do_nothing_twice(tmp_path: Path) -> None:
    report = await chaos(
        seed=7, jobs=JOBS, faults=len(FAULTS), settle_within=90, output_dir=tmp_path
    )
    print_report(report)  # the figures, in the test's output

    faults = report.chaotic.faults
    assert faults is not None
    assert all(faults.done[kind] >= 1 for kind in FAULTS), faults.done
    verdict = report.verdict
    assert report.reference is not None
    assert report.reference.settled and report.chaotic.settled
    assert verdict.lost == []
    assert verdict.duplicates == []
    assert verdict.left_running == []
    assert verdict.unaccounted_letters == []
    assert verdict.died == []
    assert verdict.compared > JOBS // 2  # a node loss leaves only a few out
    for run in (report.reference, report.chaotic):
        recorded, reproduced, audited, consistent = run.audit
        assert recorded > 0 and reproduced == recorded
        assert audited == consistent == JOBS
    assert report.ok
