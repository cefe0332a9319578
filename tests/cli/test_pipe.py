"""A reader that stops early (`lavalog ... | head -1`) is no error of lavalog's."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

JOB = """\
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: job-%d}
spec:
  tasks: [{name: worker, replicas: 1, template: {spec: {containers: [{name: w, image: x}]}}}]
"""


def test_a_closed_pipe_ends_the_command_quietly(tmp_path: Path) -> None:
    manifests = tmp_path / "many.yaml"  # ~1 MB of output: more than a pipe holds
    manifests.write_text("---\n".join(JOB % i for i in range(2_000)))
    errors = tmp_path / "stderr"
    with errors.open("w") as stderr_file:
        lavalog = subprocess.Popen(
            [sys.executable, "-m", "lavalog.cli.main", "validate", "-o", "yaml", str(manifests)],
            stdout=subprocess.PIPE,
            stderr=stderr_file,
        )
        assert lavalog.stdout is not None
        assert lavalog.stdout.read(1)  # it has started writing; leave as `head -c1` does
        lavalog.stdout.close()
        assert lavalog.wait(timeout=60) == 0
    stderr = errors.read_text()
    assert "Traceback" not in stderr
    assert stderr.endswith("job/job-1999: ok\n")
