"""kubectl, unchanged, against the simulator: get, create, apply, delete, logs, get -w.

kubectl comes from PATH, or from Debian's `kubernetes-client` package installed here
when missing (the tests run as root); without it these tests skip and say why.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from lavalog.simulator.server import SimulatedCluster

#: the cluster kubectl talks to: two nodes at time_scale 50
pytestmark = pytest.mark.cluster(nodes=2, time_scale=50)


POD = """
apiVersion: v1
kind: Pod
metadata:
  name: web
  labels: {app: web}
spec:
  containers:
  - name: main
    image: busybox
    command: ["sh", "-c", "echo serving; sleep 3600"]
"""

JOB = """
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: tf
spec:
  minAvailable: {min}
  schedulerName: volcano
  tasks:
  - name: ps
    replicas: 1
    template:
      spec:
        containers: [{name: c, image: x, command: ["sleep", "1"]}]
"""


def _find_kubectl() -> str:
    found = shutil.which("kubectl")
    if found:
        return found
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        pytest.skip("kubectl is not installed and apt-get cannot install kubernetes-client here")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for step in (["apt-get", "update"], ["apt-get", "install", "-y", "kubernetes-client"]):
        done = subprocess.run(
            step, env=env, capture_output=True, text=True, timeout=300, check=False
        )
        if done.returncode != 0:
            pytest.skip(
                f"could not install kubectl ({' '.join(step)}): {done.stderr.strip()[-300:]}"
            )
    found = shutil.which("kubectl")
    if not found:
        pytest.skip("kubernetes-client installed but kubectl is not on PATH")
    return found


@pytest.fixture(scope="session")
def kubectl_path() -> str:
    return _find_kubectl()


class Kubectl:
    def __init__(self, path: str, cluster: SimulatedCluster, workdir: Path) -> None:
        self.path = path
        self.env = {**os.environ, "KUBECONFIG": str(cluster.kubeconfig_path), "HOME": str(workdir)}
        self.workdir = workdir

    async def __call__(self, *args: str, stdin: str | None = None, ok: bool = True) -> str:
        proc = await asyncio.create_subprocess_exec(
            self.path,
            *args,
            env=self.env,
            cwd=self.workdir,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(proc.communicate(stdin.encode() if stdin else None), 30)
        if ok:
            assert proc.returncode == 0, f"kubectl {' '.join(args)} failed: {err.decode()}"
        return out.decode() + ("" if ok else err.decode())

    async def start(self, *args: str) -> asyncio.subprocess.Process:
        return await asyncio.create_subprocess_exec(
            self.path,
            *args,
            env=self.env,
            cwd=self.workdir,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )


@pytest.fixture
def kubectl(kubectl_path: str, sim_cluster: SimulatedCluster, tmp_path: Path) -> Kubectl:
    return Kubectl(kubectl_path, sim_cluster, tmp_path)


async def test_get_nodes_and_namespaces(kubectl: Kubectl) -> None:
    nodes = await kubectl("get", "nodes", "-o", "name")
    assert nodes.split() == ["node/node-1", "node/node-2"]
    namespaces = await kubectl("get", "ns")
    assert "default" in namespaces and "kube-system" in namespaces


async def test_create_get_logs_delete(kubectl: Kubectl) -> None:
    assert "pod/web created" in await kubectl("create", "-f", "-", stdin=POD)
    listed = json.loads(await kubectl("get", "pods", "-l", "app=web", "-o", "json"))
    assert [p["metadata"]["name"] for p in listed["items"]] == ["web"]
    await kubectl("wait", "--for=condition=Ready", "pod/web", "--timeout=20s")
    assert (await kubectl("logs", "web")).strip() == "serving"
    phase = await kubectl("get", "pod", "web", "-o", "jsonpath={.status.phase}")
    assert phase == "Running"
    running = await kubectl("get", "pods", "--field-selector", "status.phase=Running", "-o", "name")
    assert running.split() == ["pod/web"]
    assert 'pod "web" deleted' in await kubectl("delete", "pod", "web", "--grace-period=1")
    assert "NotFound" in await kubectl("get", "pod", "web", ok=False)


async def test_apply_creates_then_configures_a_volcano_job(kubectl: Kubectl) -> None:
    assert "job.batch.volcano.sh/tf created" in await kubectl(
        "apply", "-f", "-", stdin=JOB.replace("{min}", "1")
    )
    assert "job.batch.volcano.sh/tf configured" in await kubectl(
        "apply", "-f", "-", stdin=JOB.replace("{min}", "2")
    )
    got = await kubectl(
        "get", "vcjob", "tf", "-o", "jsonpath={.metadata.generation} {.spec.minAvailable}"
    )
    assert got == "2 2"
    assert "unchanged" in await kubectl("apply", "-f", "-", stdin=JOB.replace("{min}", "2"))
    assert "deleted" in await kubectl("delete", "-f", "-", stdin=JOB)


async def test_get_watch_streams_changes(kubectl: Kubectl) -> None:
    watcher = await kubectl.start("get", "pods", "-w", "-o", "name")
    try:
        await asyncio.sleep(1.0)
        await kubectl("create", "-f", "-", stdin=POD)
        await kubectl("delete", "pod", "web", "--grace-period=0", "--force")
        assert watcher.stdout is not None
        lines: list[str] = []
        while len(lines) < 3:
            line = await asyncio.wait_for(watcher.stdout.readline(), 10)
            lines.append(line.decode().strip())
        assert set(lines) == {"pod/web"}
    finally:
        watcher.terminate()
        await watcher.wait()


async def test_explain_reads_the_served_crd_schema(kubectl: Kubectl) -> None:
    explained = await kubectl("explain", "vcjob.spec")
    assert "KIND:       Job" in explained and "GROUP:      batch.volcano.sh" in explained
    assert "minAvailable\t<integer>" in explained and "tasks\t<[]Object>" in explained
    assert "The minimal available pods to run the job" in explained
    conditions = await kubectl("explain", "podgroup.status.conditions")
    assert "transitionID\t<string>" in conditions
    containers = await kubectl("explain", "pods.spec.containers")
    assert "imagePullPolicy\t<string>" in containers


async def test_create_validate_true_is_validated_by_the_server(kubectl: Kubectl) -> None:
    misspelt = JOB.replace("{min}", "1").replace("  schedulerName:", "  schedulername:")
    refused = await kubectl("create", "--validate=true", "-f", "-", stdin=misspelt, ok=False)
    assert 'strict decoding error: unknown field "spec.schedulername"' in refused
    assert "NotFound" in await kubectl("get", "vcjob", "tf", ok=False)
    invalid = JOB.replace("{min}", "-1")
    refused = await kubectl("create", "--validate=true", "-f", "-", stdin=invalid, ok=False)
    assert "spec.minAvailable: Invalid value: -1" in refused
    created = await kubectl("create", "--validate=true", "-f", "-", stdin=JOB.replace("{min}", "1"))
    assert "job.batch.volcano.sh/tf created" in created
    # --validate=warn keeps the job and prints kubectl's warning for the dropped field
    warned = await kubectl(
        "create",
        "--validate=warn",
        "-f",
        "-",
        stdin=misspelt.replace("name: tf", "name: tf2"),
        ok=False,
    )
    assert 'unknown field "spec.schedulername"' in warned
    assert "tf2" in await kubectl("get", "vcjob", "tf2", "-o", "name")


GANG = """
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata:
  name: big
spec:
  minMember: 3
---
""" + "---\n".join(
    f"""
apiVersion: v1
kind: Pod
metadata:
  name: big-{i}
  annotations: {{scheduling.k8s.io/group-name: big}}
spec:
  schedulerName: volcano
  containers:
  - name: main
    image: x
    command: ["sleep", "10"]
    resources: {{limits: {{nvidia.com/gpu: 5}}}}
"""
    for i in range(3)
)


async def test_describe_says_why_a_gang_waits(kubectl: Kubectl) -> None:
    await kubectl("create", "-f", "-", stdin=GANG)
    await kubectl(
        "wait",
        "--for=jsonpath={.status.conditions[0].type}=Unschedulable",
        "podgroup/big",
        "--timeout=20s",
    )
    described = await kubectl("describe", "podgroup", "big")
    assert "Warning  Unschedulable" in described
    assert (
        "3/3 tasks in gang unschedulable: pod group is not ready, 3 Pending, 3 minAvailable; "
        "Pending: 1 Unschedulable, 2 Schedulable. Origin reason is big-2: "
        "0/2 nodes are unavailable: 2 Insufficient nvidia.com/gpu." in described
    )
    pod = await kubectl("describe", "pod", "big-0")
    assert "Warning  FailedScheduling" in pod and "volcano" in pod
