"""Volcano's e2e suite `test/e2e/jobseq/` against lavalog and the strict simulated cluster.

Each test ports one `It(...)` of volcano-sh/volcano `test/e2e/jobseq/*.go`, named in its
docstring: the plugins (svc, ssh, env, mpi, pytorch, tensorflow, ray) and the queue's
PodGroups. The images' programs (nginx, mpiexec, mnist) are replaced by what the
simulated kubelet runs (`sleep`), so a test checks what the controller does (pods,
their volumes and environment, plugin objects, phases), not the frameworks themselves;
a program whose end decides the job's path (mpiexec, the training) ends when the test
says, once the job runs.
Volcano's `WaitJobPhases` checks that the job passes the listed phases in order
(others may come between); so do these tests. All plugin jobs run at once in one system.

Already ported elsewhere: job_error_handling.go (tests/e2e/test_lifecycle.py; its two
"unschedulable" cases, a gang that loses a member and cannot be placed again, in
tests/e2e/test_faults.py with a lost node where Volcano taints every node). Not ported:
"Task Priority" (the scheduler's ordering by PriorityClass: the simulated scheduler has
no priorities; lavalog copies `priorityClassName` into the pods,
tests/actuator/core/test_pods.py), queue.go (`vcctl queue
operate` Commands are handled by Volcano's queue controller, which lavalog does not
replace), and "Transform from running to unknown after a member is gone" (a PodGroup
and pods made by hand, no Job: the scheduler's work, tests/simulator/test_scheduler.py).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field
from typing import Any

import pytest
import pytest_asyncio

from lavalog.controller.kafka import ensure_topics
from lavalog.simulator import registry
from lavalog.simulator.selectors import Selector
from lavalog.simulator.store import Change
from tests.e2e.conftest import NAMESPACE, System, make_kafka, pod_phase, running_system
from tests.e2e.faults import Finish, inject
from tests.e2e.jobs import FOREVER, job, on, task

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="module")]

P, R = "Pending", "Running"
SHORT = "sleep 20"  # 0.4 s at time scale 50
LABELS = {"foo": "bar"}
NON_ROOT = "--ssh-key-file-path=/home/e2e/.ssh"
NODE_AFFINITY = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-1"]}]}
            ]
        }
    }
}
POD_AFFINITY = {
    "podAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": LABELS}, "topologyKey": "kubernetes.io/hostname"}
        ]
    }
}


def shaped(spec: dict[str, Any], **pod: Any) -> dict[str, Any]:
    """A task whose pod template gets `pod` (affinity, labels, container name...)."""
    template = spec["template"]
    for key, value in pod.items():
        if key == "labels":
            template.setdefault("metadata", {})["labels"] = value
        elif key == "container":
            template["spec"]["containers"][0]["name"] = value
        else:
            template["spec"][key] = value
    return spec


MANIFESTS = [
    # job_plugins.go
    job("job-with-svc-plugin", shaped(task("task", 1), affinity=NODE_AFFINITY), plugins={"svc": []}),
    # Volcano's test passes `--no-root`, a flag its ssh plugin no longer has (it logs the
    # parse error and goes on); lavalog refuses unknown flags (docs/actuator.md), so the
    # job asks for the non-root key path by the flag that does it now, and the job as
    # Volcano's test writes it is the next one
    job("job-with-ssh-plugin", shaped(task("task", 2), affinity=POD_AFFINITY, labels=LABELS), plugins={"ssh": [NON_ROOT]}),
    job("ssh-no-root", task("task", 1), plugins={"ssh": ["--no-root"]}),
    job("svc-with-disable-network-policy", task("task", 2), plugins={"svc": ["--disable-network-policy=true"]}),
    job("svc-without-hosts-env", task("task", 2), plugins={"svc": ["--inject-hosts-env=false"]}),
    job("job-with-all-plugin", task("task", 2), plugins={"ssh": [NON_ROOT], "env": [], "svc": []}),
    # mpi.go
    job(
        "mpi",
        task("mpimaster", 1),  # its mpiexec ends when the test says (`finish`)
        task("mpiworker", 2, FOREVER),
        policies=[on("TaskCompleted", "CompleteJob")],
        plugins={"ssh": [], "env": [], "svc": []},
    ),
    # mpi_plugin.go
    job(
        "mpi-plugin",
        task("mpimaster", 1, SHORT),
        task("mpiworker", 2, FOREVER),
        minAvailable=1,
        policies=[on("TaskCompleted", "CompleteJob")],
        plugins={"mpi": ["--master=mpimaster", "--worker=mpiworker", "--port=22"]},
    ),
    # pytorch_plugin.go
    job(
        "pytorch-job",
        task("master", 1, SHORT),
        task("worker", 2, SHORT),
        minAvailable=1,
        policies=[on("TaskCompleted", "CompleteJob")],
        plugins={"pytorch": ["--master=master", "--worker=worker", "--port=23456"]},
    ),
    # tensorflow_plugin.go (tensorflow.go is the same job, with its plugins written out)
    job(
        "tensorflow-dist-mnist",
        shaped(task("ps", 1, FOREVER), container="tensorflow"),
        # the workers' training ends when the test says (`finish`)
        shaped(task("worker", 2, policies=[on("TaskCompleted", "CompleteJob")]), container="tensorflow"),
        minAvailable=3,
        policies=[on("PodEvicted", "RestartJob")],
        plugins={"tensorflow": ["--ps=ps", "--worker=worker", "--port=2222"]},
    ),
    # ray_plugin.go
    job(
        "ray-cluster-job",
        shaped(task("head", 1), container="ray"),
        shaped(task("worker", 1), container="ray"),
        minAvailable=1,
        policies=[on("PodEvicted", "RestartJob")],
        plugins={
            "ray": ["--head=head", "--worker=worker", "--port=2345", "--headContainer=ray", "--workerContainer=ray"],
            "svc": [],
        },
    ),
]  # fmt: skip


@dataclass
class World:
    system: System
    #: pod name -> the pod as lavalog created it (a finished job's running pods are gone)
    pods: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: (kind, name) of everything created, deleted since or not
    created: set[tuple[str, str]] = field(default_factory=set)

    def on_change(self, change: Change) -> None:
        if change.type != "ADDED":
            return
        name = change.entry.obj["metadata"]["name"]
        self.created.add((change.resource.kind, name))
        if change.resource is registry.POD:
            self.pods.setdefault(name, change.entry.obj)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def world(kafka_broker: str) -> AsyncIterator[World]:
    kafka = make_kafka(kafka_broker)
    await ensure_topics(kafka)
    async with running_system(kafka, nodes=2, time_scale=50) as system:
        seen = World(system)
        system.cluster.store.subscribe(seen.on_change)
        for manifest in MANIFESTS:
            await system.submit(manifest)
        yield seen


def find(world: World, resource: registry.ResourceType, name: str) -> dict[str, Any] | None:
    return world.system.cluster.objects.find(resource, NAMESPACE, name)


def pod(world: World, name: str) -> dict[str, Any]:
    found = world.pods.get(name)
    assert found is not None, f"no pod {name}"
    return found


def volume_names(pod_obj: dict[str, Any]) -> set[str]:
    return {v["name"] for v in pod_obj["spec"].get("volumes") or ()}


def containers(pod_obj: dict[str, Any]) -> list[dict[str, Any]]:
    return [*pod_obj["spec"]["containers"], *(pod_obj["spec"].get("initContainers") or ())]


def env_of(container: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container.get("env") or ()}


async def ready(world: World, name: str) -> None:
    """e2eutil.WaitJobReady: the job Running with every pod of it running."""
    system = world.system
    await system.until_phase(name, [R], 30)
    wanted: int = sum(
        int(t["replicas"])
        for m in MANIFESTS
        if m["metadata"]["name"] == name
        for t in m["spec"]["tasks"]
    )

    def all_running() -> bool:
        return [pod_phase(p) for p in system.log.pods_of(name)].count(R) == wanted

    await system.log.until(all_running, 30, f"{wanted} pods of {name} running")


async def finish(world: World, name: str, pods: tuple[str, ...]) -> None:
    """The programs of `pods` (of job `name`) end successfully once the job is ready.
    Left to a `sleep`, they could end before every pod of the job runs (on a busy machine
    the simulated cluster, 50 times faster than the wall clock, starts a gang's pods
    seconds of its time apart), and the job would go Pending -> Completing."""
    manifest = next(m for m in MANIFESTS if m["metadata"]["name"] == name)
    await ready(world, name)
    await inject(world.system, manifest, [Finish(pods)])


def passes_through(path: list[str], phases: Iterable[str]) -> bool:
    """e2eutil.WaitJobPhases: `phases` in this order within `path`."""
    remaining = iter(path)
    return all(phase in remaining for phase in phases)


# -- job_plugins.go ---------------------------------------------------------------------------


async def test_svc_plugin_mounts_its_hosts_configmap(world: World) -> None:
    """job_plugins.go "Test SVC Plugin with Node Affinity": the `<job>-svc` ConfigMap
    exists and pod `<job>-task-0` has a volume of that name. The simulated scheduler does
    not place by affinity; lavalog's part, the affinity carried into the pod, is checked."""
    name = "job-with-svc-plugin"
    await ready(world, name)

    assert find(world, registry.CONFIGMAP, f"{name}-svc") is not None
    created = pod(world, f"{name}-task-0")
    assert f"{name}-svc" in volume_names(created)
    assert created["spec"]["affinity"] == NODE_AFFINITY


async def test_ssh_plugin_mounts_its_key_secret(world: World) -> None:
    """job_plugins.go "Test SSh Plugin with Pod Affinity": the `<job>-ssh` Secret exists
    and pod `<job>-task-0` has a volume of that name (a non-root key path: Volcano's
    ssh.go `mountRsaKey` mounts the keys there with mode 0644, not 0600). Placement by pod
    affinity is the scheduler's, not simulated; the pods carry the affinity and labels."""
    name = "job-with-ssh-plugin"
    await ready(world, name)

    assert find(world, registry.SECRET, f"{name}-ssh") is not None
    for index in range(2):
        created = pod(world, f"{name}-task-{index}")
        keys = [v for v in created["spec"]["volumes"] if v["name"] == f"{name}-ssh"]
        assert len(keys) == 1 and keys[0]["secret"]["defaultMode"] == 0o644
        mounts = created["spec"]["containers"][0]["volumeMounts"]
        assert {(m["name"], m["mountPath"]) for m in mounts} >= {(f"{name}-ssh", "/home/e2e/.ssh")}
        assert created["spec"]["affinity"] == POD_AFFINITY
        assert created["metadata"]["labels"]["foo"] == "bar"


async def test_ssh_no_root_as_volcanos_test_writes_it_is_refused_clearly(world: World) -> None:
    """The job of "Test SSh Plugin with Pod Affinity" as Volcano's test writes it: ssh's
    `--no-root` is no flag of Volcano's ssh plugin (ssh.go `addFlags`), which logs the parse
    error and runs with its defaults. lavalog refuses the job with a Warning Event naming
    the flag and Fails it (docs/actuator.md, "Bad plugin arguments are rejected")."""
    name = "ssh-no-root"
    failed = await world.system.until_phase(name, ["Failed"], 30)

    assert failed["status"]["state"]["reason"] == "InvalidSpec"
    refused = [
        e
        for e in world.system.cluster.objects.store.scan(registry.EVENT, NAMESPACE, Selector())
        if e.obj["involvedObject"]["name"] == name and e.obj["reason"] == "InvalidSpec"
    ]
    assert len(refused) == 1 and "no-root" in refused[0].obj["message"]
    assert refused[0].obj["type"] == "Warning"
    assert not world.system.log.pods_of(name)


async def test_svc_plugin_without_network_policy(world: World) -> None:
    """job_plugins.go "Test SVC Plugin with disableNetworkPolicy": no NetworkPolicy named
    as the job (while its Service and ConfigMap are there)."""
    name = "svc-with-disable-network-policy"
    await ready(world, name)

    assert find(world, registry.SERVICE, name) is not None
    assert find(world, registry.CONFIGMAP, f"{name}-svc") is not None
    assert find(world, registry.NETWORK_POLICY, name) is None


async def test_svc_plugin_without_hosts_env(world: World) -> None:
    """job_plugins.go "Test SVC Plugin with injectHostsEnv disabled": the ConfigMap
    exists, and no container has `VC_TASK_HOSTS` or `VC_TASK_NUM` (svc/const.go
    `EnvTaskHostFmt`, `EnvHostNumFmt`)."""
    name = "svc-without-hosts-env"
    await ready(world, name)

    assert find(world, registry.CONFIGMAP, f"{name}-svc") is not None
    for container in containers(pod(world, f"{name}-task-0")):
        assert not {"VC_TASK_HOSTS", "VC_TASK_NUM"} & set(env_of(container))


async def test_all_plugins_together(world: World) -> None:
    """job_plugins.go "Check Functionality of all plugins" (ssh, env, svc): the Secret and
    its volume, every container with env's `VK_TASK_INDEX` and `VC_TASK_INDEX` and svc's
    `VC_TASK_HOSTS` and `VC_TASK_NUM`, and the Service named as the job."""
    name = "job-with-all-plugin"
    await ready(world, name)

    assert find(world, registry.SECRET, f"{name}-ssh") is not None
    created = pod(world, f"{name}-task-1")
    assert f"{name}-ssh" in volume_names(created)
    for container in containers(created):
        env = env_of(container)
        assert {"VK_TASK_INDEX", "VC_TASK_INDEX", "VC_TASK_HOSTS", "VC_TASK_NUM"} <= set(env)
        assert env["VK_TASK_INDEX"] == env["VC_TASK_INDEX"] == "1"
    assert find(world, registry.SERVICE, name) is not None


# -- the distributed frameworks -----------------------------------------------------------------


async def test_mpi_job_with_ssh_env_svc_completes(world: World) -> None:
    """mpi.go "will run and complete finally": the master ends, TaskCompleted ->
    CompleteJob: Pending, Running, Completing, Completed; the workers read their hosts
    from the svc ConfigMap mounted at /etc/volcano (svc/const.go `ConfigMapMountPath`)."""
    name = "mpi"
    await finish(world, name, ("mpimaster-0",))
    await world.system.until_phase(name, ["Completed"], 30)

    assert passes_through(world.system.log.phase_path(name), [P, R, "Completing", "Completed"])
    master = pod(world, f"{name}-mpimaster-0")
    mounts = {m["name"]: m["mountPath"] for m in master["spec"]["containers"][0]["volumeMounts"]}
    assert mounts[f"{name}-svc"] == "/etc/volcano"


async def test_mpi_plugin_job_completes_with_mpi_host(world: World) -> None:
    """mpi_plugin.go "will run and complete finally" (mpi plugin: `--master`, `--worker`,
    `--port=22`): Pending, Running, Completing, Completed; the master's `MPI_HOST` lists
    the workers (mpi.go `generateTaskHosts`) and every pod opens port 22."""
    name = "mpi-plugin"
    await world.system.until_phase(name, ["Completed"], 30)

    assert passes_through(world.system.log.phase_path(name), [P, R, "Completing", "Completed"])
    master = pod(world, f"{name}-mpimaster-0")
    assert env_of(master["spec"]["containers"][0])["MPI_HOST"] == (
        f"{name}-mpiworker-0.{name},{name}-mpiworker-1.{name}"
    )
    worker = pod(world, f"{name}-mpiworker-0")
    assert 22 in {p["containerPort"] for p in worker["spec"]["containers"][0]["ports"]}


async def test_pytorch_plugin_job_completes(world: World) -> None:
    """pytorch_plugin.go "will run and complete finally" (skipped in Volcano's CI for its
    image): Pending, Running, Completed; the pods get pytorch.go's `MASTER_ADDR`,
    `MASTER_PORT`, `WORLD_SIZE` and `RANK`."""
    name = "pytorch-job"
    await world.system.until_phase(name, ["Completed"], 30)

    assert passes_through(world.system.log.phase_path(name), [P, R, "Completed"])
    for index, pod_name in enumerate([f"{name}-master-0", f"{name}-worker-0", f"{name}-worker-1"]):
        env = env_of(pod(world, pod_name)["spec"]["containers"][0])
        assert env["MASTER_ADDR"] == f"{name}-master-0.{name}"
        assert (env["MASTER_PORT"], env["WORLD_SIZE"], env["RANK"]) == ("23456", "3", str(index))


async def test_tensorflow_plugin_job_completes(world: World) -> None:
    """tensorflow_plugin.go and tensorflow.go "Will Start in pending state and goes
    through other phases to get complete phase": the workers end, TaskCompleted ->
    CompleteJob: Pending, Running, Completed; each pod has tensorflow.go's `TF_CONFIG`."""
    name = "tensorflow-dist-mnist"
    await finish(world, name, ("worker-0", "worker-1"))
    await world.system.until_phase(name, ["Completed"], 30)

    assert passes_through(world.system.log.phase_path(name), [P, R, "Completed"])
    env = env_of(pod(world, f"{name}-worker-1")["spec"]["containers"][0])
    assert '"task":{"type":"worker","index":1}' in env["TF_CONFIG"].replace(" ", "")


async def test_ray_plugin_job_runs_behind_its_service(world: World) -> None:
    """ray_plugin.go "Will Start in pending state and get running phase": the Service
    named as the job exists and the job goes Pending, Running. The plugin's containers
    run `ray start` (ray.go), which the simulated busybox image does not have: the job
    fails right after (and its Service goes with the whole job's kill, as in Volcano),
    which Volcano's test, stopping at Running, does not look at."""
    name = "ray-cluster-job"
    log = world.system.log
    await log.until(
        lambda: passes_through(log.phase_path(name), [P, R]), 30, f"{name} Pending, Running"
    )

    assert ("Service", name) in world.created
    head = pod(world, f"{name}-head-0")["spec"]["containers"][0]
    assert head["name"] == "ray"
    assert head["command"][-1].startswith("ray start --head --block")


# -- queue_job_status.go ------------------------------------------------------------------------

QUEUE = "queue-jobs-status-transition"
QUEUES = "/apis/scheduling.volcano.sh/v1beta1/queues"


def running_pods(system: System, name: str) -> list[str]:
    return [
        p["metadata"]["name"]
        for p in system.log.pods_of(name)
        if pod_phase(p) == R and not p["metadata"].get("deletionTimestamp")
    ]


def podgroup_phases(system: System) -> dict[str, str]:
    """The phases of the PodGroups in QUEUE (e2eutil.GetPodGroupStatistics), by job."""
    return {
        e.obj["metadata"]["ownerReferences"][0]["name"]: e.obj.get("status", {}).get("phase", "")
        for e in system.cluster.objects.store.scan(registry.PODGROUP, NAMESPACE, Selector())
        if e.obj["spec"].get("queue") == QUEUE
    }


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def queue_world(kafka_broker: str) -> AsyncIterator[System]:
    """A system of its own: its jobs fill the cluster."""
    kafka = make_kafka(kafka_broker)
    await ensure_topics(kafka)
    async with running_system(kafka, nodes=2, time_scale=50) as system:
        yield system


async def test_a_queues_podgroups_go_from_running_to_pending(queue_world: System) -> None:
    """queue_job_status.go "Transform from running to pending should succeed": two jobs in
    one queue, each filling the cluster: one's PodGroup is Running, the other's Pending,
    never both placed. The running job's pods are deleted: a PodGroup of the queue is
    Pending, and a gang runs again whole (lavalog recreates the deleted pods)."""
    system = queue_world
    await system.kube.request(
        "POST", QUEUES, body={"metadata": {"name": QUEUE}, "spec": {"weight": 1}}
    )
    names = [f"queue-job-status-transition-test-job-{i}" for i in range(2)]
    for name in names:
        # 4 pods of 4 CPUs: both 8-CPU nodes
        await system.submit(job(name, task("queue-job", 4, cpu="4"), queue=QUEUE))
    log = system.log

    def one_runs() -> bool:
        return sorted(podgroup_phases(system).values()) == [P, R]

    await log.until(one_runs, 30, f"one Running PodGroup in the queue: {podgroup_phases(system)}")
    first = next(n for n, phase in podgroup_phases(system).items() if phase == R)
    await system.until_phase(first, [R], 30)

    for created in log.pods_of(first):
        await system.kube.request(
            "DELETE", f"/api/v1/namespaces/{NAMESPACE}/pods/{created['metadata']['name']}"
        )

    def gang_runs_again() -> bool:
        if sorted(podgroup_phases(system).values()) != [P, R]:
            return False
        gone = not any(p["metadata"].get("deletionTimestamp") for p in log.pods_of(first))
        placed = sorted(len(running_pods(system, n)) for n in names)
        return gone and placed == [0, 4]

    await log.until(gang_runs_again, 30, f"a gang running again: {podgroup_phases(system)}")
