"""Everything lavalog writes to the cluster is what a real API server keeps whole and
what Volcano's controller would have written, name for name.

One system runs jobs that use every plugin Volcano's e2e suites use (svc, ssh, env,
tensorflow, pytorch, mpi), a generated and an existing volume claim, lifecycle policies,
a gang that cannot fit, a restart and an abort made with `lavalog job`. The simulated
API server reports every write it serves (`SimulatedCluster.on_write`) with the body as
sent; the test's own writes carry their own User-Agent and are left out.

Each write is checked twice:
- against the schema the API server holds it to (the CRDs in deploy/crds/, the core
  kinds' types): nothing was pruned (no `unknown field` warning), and a created or
  replaced body passes the schema as sent, with nothing unknown and nothing invalid;
- against Volcano's naming: the expected names, labels, annotations and reasons below
  are written out from Volcano's sources (cited per row), never from lavalog's
  constants.
"""

from __future__ import annotations

import copy
import re
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
import pytest_asyncio

from lavalog.apimachinery import schema
from lavalog.controller.kafka import ensure_topics
from lavalog.simulator import fields, registry
from lavalog.simulator.selectors import Selector
from lavalog.simulator.writes import Write
from tests.e2e.conftest import NAMESPACE, System, job_phase, make_kafka, running_system
from tests.e2e.jobs import FOREVER, job, on, task
from tests.watchers.manifests import job_owner

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="module")]

#: the User-Agent of this test's own client: its writes are not lavalog's
TEST_AGENT = "lavalog-written-objects-test"
EXISTING_CLAIM = "existing-claim"
SHORT = "sleep 20"  # 0.4 s at time scale 50

CLAIM_SPEC = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}

JOBS: dict[str, dict[str, Any]] = {
    m["metadata"]["name"]: m
    for m in (
        job(
            "plugins",
            task("task", 2, "sleep 100"),
            plugins={"svc": [], "ssh": [], "env": []},
            volumes=[
                {"mountPath": "/data", "volumeClaim": CLAIM_SPEC},
                {"mountPath": "/existing", "volumeClaimName": EXISTING_CLAIM},
            ],
            policies=[on("PodEvicted", "RestartJob")],
        ),
        job(
            "tensorflow",
            task("ps", 1, FOREVER),
            task("worker", 2, SHORT, policies=[on("TaskCompleted", "CompleteJob")]),
            plugins={"tensorflow": ["--ps=ps", "--worker=worker", "--port=2222"]},
        ),
        job(
            "pytorch",
            task("master", 1, SHORT),
            task("worker", 2, SHORT),
            plugins={"pytorch": ["--master=master", "--worker=worker", "--port=23456"]},
        ),
        job(
            "mpi",
            task("mpimaster", 1, SHORT),
            task("mpiworker", 2, FOREVER),
            plugins={"mpi": ["--master=mpimaster", "--worker=mpiworker", "--port=22"]},
            policies=[on("TaskCompleted", "CompleteJob")],
        ),
        # vc-scheduler's enqueue refuses it: its PodGroup stays Pending, without pods
        job("too-big", task("huge", 1, cpu="10000")),
        # enqueued (it fits the overcommitted cluster) but no 8-CPU node takes 9 CPUs
        job("unplaceable", task("big", 1, cpu="9")),
        job("retried", task("fail", 1, "sleep 20; exit 1"), maxRetry=2, policies=[on("PodFailed", "RestartJob")]),
        job("aborted", task("worker", 2), plugins={"svc": []}),
    )
}  # fmt: skip

#: where each job ends, and what else must have happened before the writes are read
ENDS = {
    "plugins": "Completed",
    "tensorflow": "Completed",
    "pytorch": "Completed",
    "mpi": "Completed",
    "too-big": "Pending",
    "unplaceable": "Pending",
    "retried": "Failed",
    "aborted": "Aborted",
}


@dataclass
class Written:
    system: System
    writes: list[Write] = field(default_factory=list)
    #: job name -> uid
    uids: dict[str, str] = field(default_factory=dict)

    def lavalogs(
        self, resource: registry.ResourceType, subresource: str | None = None
    ) -> list[Write]:
        return [
            w
            for w in self.writes
            if w.user_agent != TEST_AGENT
            and w.resource is resource
            and w.subresource == subresource
        ]

    def created(self, resource: registry.ResourceType) -> list[dict[str, Any]]:
        return [w.stored for w in self.lavalogs(resource) if w.method == "POST"]

    def job_of_owner(self, obj: dict[str, Any]) -> str:
        """The name of the Job that controls `obj`, found by uid (not by lavalog's labels);
        the reference is `metav1.NewControllerRef(job, helpers.JobKind)`, as Volcano's
        controller and vcctl (pkg/cli/util/util.go) set it."""
        owners = obj["metadata"].get("ownerReferences") or []
        assert len(owners) == 1, obj["metadata"]
        by_uid = {uid: name for name, uid in self.uids.items()}
        name = by_uid[owners[0]["uid"]]
        assert owners[0] == job_owner(name, self.uids[name])
        return name


def events_of(system: System, name: str, reason: str) -> list[dict[str, Any]]:
    return [
        e.obj
        for e in system.cluster.objects.store.scan(registry.EVENT, NAMESPACE, Selector())
        if e.obj["involvedObject"]["name"] == name and e.obj["reason"] == reason
    ]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def written(kafka_broker: str) -> AsyncIterator[Written]:
    kafka = make_kafka(kafka_broker)
    await ensure_topics(kafka)
    async with running_system(kafka, nodes=2, time_scale=50) as system:
        seen = Written(system)
        system.cluster.on_write(seen.writes.append)
        system.kube.api.user_agent = TEST_AGENT
        await system.kube.request(
            "POST",
            f"/api/v1/namespaces/{NAMESPACE}/persistentvolumeclaims",
            body={"metadata": {"name": EXISTING_CLAIM}, "spec": CLAIM_SPEC},
        )
        for name, manifest in JOBS.items():
            seen.uids[name] = (await system.submit(manifest))["metadata"]["uid"]
        log = system.log
        await system.until_phase("aborted", ["Running"], 30)
        await system.command("aborted", "abort")
        await system.until_phase("plugins", ["Running"], 30)
        await system.command("plugins", "restart")
        for name, phase in ENDS.items():
            await system.until_phase(name, [phase], 60)
        await log.until(
            lambda: bool(events_of(system, "unplaceable", "PodGroupPending")),
            30,
            "PodGroupPending on unplaceable",
        )
        await log.until(lambda: not log.live_pods("aborted"), 30, "aborted's pods gone")
        yield seen


# -- schemas --------------------------------------------------------------------------------

#: every kind lavalog writes, as (resource, subresource)
KINDS = [
    pytest.param(registry.POD, None, id="Pod"),
    pytest.param(registry.PODGROUP, None, id="PodGroup"),
    pytest.param(registry.SERVICE, None, id="Service"),
    pytest.param(registry.CONFIGMAP, None, id="ConfigMap"),
    pytest.param(registry.SECRET, None, id="Secret"),
    pytest.param(registry.NETWORK_POLICY, None, id="NetworkPolicy"),
    pytest.param(registry.PVC, None, id="PersistentVolumeClaim"),
    pytest.param(registry.EVENT, None, id="Event"),
    pytest.param(registry.JOB, "status", id="Job-status"),
    # job_controller_actions.go `createOrUpdatePVC` records a made claim's name in the spec
    pytest.param(registry.JOB, None, id="Job-volumeClaimName"),
    pytest.param(registry.COMMAND, None, id="Command"),
]


@pytest.mark.parametrize(("resource", "subresource"), KINDS)
async def test_every_write_is_kept_whole_by_the_schema(
    written: Written, resource: registry.ResourceType, subresource: str | None
) -> None:
    writes = written.lavalogs(resource, subresource)
    assert writes, f"lavalog wrote no {resource.kind}"

    pruned = [(w.method, w.stored["metadata"]["name"], w.warnings) for w in writes if w.warnings]
    assert pruned == []
    for w in writes:
        if w.method in ("POST", "PUT"):
            body = copy.deepcopy(w.sent)
            findings = schema.apply(fields.schema_of(resource), body, defaults=False)
            assert (findings.unknown, findings.invalid) == ([], []), w.sent


async def test_lavalogs_own_writes_are_told_from_the_tests(written: Written) -> None:
    """The checks see lavalog's writes only: the test's PVC and Jobs are not among them,
    and lavalog's one write of a Job's spec records the claim it made."""
    claims = {w.stored["metadata"]["name"] for w in written.lavalogs(registry.PVC)}
    assert EXISTING_CLAIM not in claims
    spec_writes = written.lavalogs(registry.JOB)
    assert [(w.method, w.stored["metadata"]["name"]) for w in spec_writes] == [("PUT", "plugins")]
    volumes = spec_writes[0].stored["spec"]["volumes"]
    assert volumes[0]["volumeClaimName"] in claims


# -- names ------------------------------------------------------------------------------------


def task_names(name: str) -> dict[str, int]:
    return {t["name"]: t["replicas"] for t in JOBS[name]["spec"]["tasks"]}


def check_pod(w: Written, pod: dict[str, Any]) -> None:
    """pkg/controllers/job/job_controller_util.go `createJobPod` (names: helpers.go
    `PodNameFmt = "%s-%s-%d"`; keys: volcano-sh/apis batch/v1alpha1/labels.go,
    scheduling/v1beta1/labels.go)."""
    name = w.job_of_owner(pod)
    meta = pod["metadata"]
    found = [
        (t, i)
        for t, n in task_names(name).items()
        for i in range(n)
        if meta["name"] == f"{name}-{t}-{i}"
    ]
    assert len(found) == 1, meta["name"]
    task_name, index = found[0]
    labels, annotations = meta["labels"], meta["annotations"]
    assert {k: labels.get(k) for k in LABELS} == {
        "volcano.sh/task-index": str(index),
        "volcano.sh/job-name": name,
        "volcano.sh/task-spec": task_name,
        "volcano.sh/job-namespace": NAMESPACE,
        "volcano.sh/queue-name": "default",
    }
    assert {k: annotations.get(k) for k in ANNOTATIONS} == {
        "volcano.sh/task-index": str(index),
        "volcano.sh/task-spec": task_name,
        "scheduling.k8s.io/group-name": f"{name}-{w.uids[name]}",
        "volcano.sh/job-name": name,
        "volcano.sh/queue-name": "default",
        "volcano.sh/job-version": annotations.get("volcano.sh/job-version"),
        "volcano.sh/template-uid": f"{name}-{task_name}",
        "volcano.sh/job-retry-count": annotations.get("volcano.sh/job-retry-count"),
    }
    assert annotations["volcano.sh/job-version"].isdigit()
    assert annotations["volcano.sh/job-retry-count"].isdigit()
    assert pod["spec"]["schedulerName"] == "volcano"


LABELS = (
    "volcano.sh/task-index",
    "volcano.sh/job-name",
    "volcano.sh/task-spec",
    "volcano.sh/job-namespace",
    "volcano.sh/queue-name",
)
ANNOTATIONS = (
    "volcano.sh/task-index",
    "volcano.sh/task-spec",
    "scheduling.k8s.io/group-name",
    "volcano.sh/job-name",
    "volcano.sh/queue-name",
    "volcano.sh/job-version",
    "volcano.sh/template-uid",
    "volcano.sh/job-retry-count",
)


def check_podgroup(w: Written, group: dict[str, Any]) -> None:
    """job_controller_actions.go `generateRelatedPodGroupName`: `<job>-<job uid>`; queue
    and minMember from the Job's spec (`createOrUpdatePodGroup`)."""
    name = w.job_of_owner(group)
    assert group["metadata"]["name"] == f"{name}-{w.uids[name]}"
    assert group["spec"]["queue"] == "default"
    assert group["spec"]["minMember"] == sum(task_names(name).values())


def check_service(w: Written, service: dict[str, Any]) -> None:
    """plugins/svc/svc.go `createServiceIfNotExist`: named as the job, headless
    (`ClusterIP: "None"`), selecting the job's pods by `volcano.sh/job-name` and
    `volcano.sh/job-namespace`."""
    name = w.job_of_owner(service)
    assert service["metadata"]["name"] == name
    assert service["spec"]["clusterIP"] == "None"
    assert service["spec"]["selector"] == {
        "volcano.sh/job-name": name,
        "volcano.sh/job-namespace": NAMESPACE,
    }


def check_configmap(w: Written, config: dict[str, Any]) -> None:
    """plugins/svc/svc.go `cmName` (`<job>-svc`) and `GenerateHosts` (const.go:
    `ConfigMapTaskHostFmt = "%s.host"`, `EnvTaskHostFmt = "VC_%s_HOSTS"`,
    `EnvHostNumFmt = "VC_%s_NUM"`, per task)."""
    name = w.job_of_owner(config)
    assert config["metadata"]["name"] == f"{name}-svc"
    expected = {}
    for t, n in task_names(name).items():
        hosts = [f"{name}-{t}-{i}.{name}" for i in range(n)]
        key = t.replace("-", "_")
        expected[f"{key}.host"] = "\n".join(hosts)
        expected[f"VC_{key.upper()}_HOSTS"] = ",".join(hosts)
        expected[f"VC_{key.upper()}_NUM"] = str(n)
    assert config["data"] == expected


def check_networkpolicy(w: Written, policy: dict[str, Any]) -> None:
    """plugins/svc/svc.go `createNetworkPolicyIfNotExist`: named as the job, Ingress only,
    from the job's own pods."""
    name = w.job_of_owner(policy)
    selector = {"volcano.sh/job-name": name, "volcano.sh/job-namespace": NAMESPACE}
    assert policy["metadata"]["name"] == name
    assert policy["spec"]["podSelector"] == {"matchLabels": selector}
    assert policy["spec"]["ingress"] == [{"from": [{"podSelector": {"matchLabels": selector}}]}]
    assert policy["spec"]["policyTypes"] == ["Ingress"]


def check_secret(w: Written, secret: dict[str, Any]) -> None:
    """plugins/ssh/ssh.go `secretName` (`<job>-ssh`) and const.go's four keys."""
    name = w.job_of_owner(secret)
    assert secret["metadata"]["name"] == f"{name}-ssh"
    assert set(secret["data"]) == {"id_rsa", "id_rsa.pub", "authorized_keys", "config"}


def check_claim(w: Written, claim: dict[str, Any]) -> None:
    """helpers/helpers.go `GenPVCName`: `persistentVolumeClaimFmt = "%s-pvc-%s"` with
    `GenRandomStr(12)` over [0-9a-z]."""
    name = w.job_of_owner(claim)
    assert re.fullmatch(rf"{re.escape(name)}-pvc-[0-9a-z]{{12}}", claim["metadata"]["name"])
    assert claim["spec"]["accessModes"] == CLAIM_SPEC["accessModes"]


def check_command(w: Written, command: dict[str, Any]) -> None:
    """pkg/cli/util/util.go `CreateJobCommand` (what `vcctl job` writes): generateName
    `<job>-<action in lower case>-`, the controller reference as owner and `target`."""
    name = w.job_of_owner(command)
    action = command["action"]
    assert action in ("AbortJob", "RestartJob")
    assert command["metadata"]["generateName"] == f"{name}-{action.lower()}-"
    assert command["target"] == job_owner(name, w.uids[name])


#: job_controller.go: `EventSource{Component: "vc-controller-manager"}`; reasons:
#: volcano-sh/apis batch/v1alpha1/job.go `JobEvent`s and constant.go's pod reasons, and
#: the Events lavalog records where Volcano has none (docs/semantics.md, "Events"): a
#: phase change (reason: the JobPhase) and a rejected spec
EVENT_REASONS = {
    "Pending",
    "Aborting",
    "Aborted",
    "Running",
    "Restarting",
    "Completing",
    "Completed",
    "Terminating",
    "Terminated",
    "Failed",
    "InvalidSpec",
    "CommandIssued",
    "PluginError",
    "PVCError",
    "PodGroupError",
    "ExecuteAction",
    "JobStatusError",
    "PodGroupPending",
    "FailedCreate",
    "SuccessfulCreate",
    "FailedDelete",
    "SuccessfulDelete",
}


def check_event(w: Written, event: dict[str, Any]) -> None:
    involved = event["involvedObject"]
    assert (involved["apiVersion"], involved["kind"]) == ("batch.volcano.sh/v1alpha1", "Job")
    assert involved["uid"] == w.uids[involved["name"]]
    assert event["reason"] in EVENT_REASONS
    assert event["source"] == {"component": "vc-controller-manager"}
    assert event["type"] in ("Normal", "Warning")


#: volcano-sh/apis batch/v1alpha1/job.go `JobPhase` values
PHASES = {
    "Pending", "Aborting", "Aborted", "Running", "Restarting", "Completing", "Completed",
    "Terminating", "Terminated", "Failed",
}  # fmt: skip


def check_status(w: Written, job_obj: dict[str, Any]) -> None:
    """volcano-sh/apis `JobStatus`; job_controller_util.go/state: one condition per
    phase (`appendJobCondition`); `controlledResources` keys `plugin-<name>`
    (plugins' `OnJobAdd`) and `volume-pvc-<claim>` (job_controller_actions.go)."""
    name = job_obj["metadata"]["name"]
    status = job_obj["status"]
    assert status["state"]["phase"] in PHASES
    kinds = [c["status"] for c in status.get("conditions") or ()]
    assert set(kinds) <= PHASES and len(kinds) == len(set(kinds)), kinds
    plugins = implied_plugins(set(JOBS[name]["spec"].get("plugins") or ()))
    for key, value in (status.get("controlledResources") or {}).items():
        if key.startswith("plugin-"):
            assert value in plugins and key == f"plugin-{value}"
        else:
            assert key == f"volume-pvc-{value}"


def implied_plugins(plugins: set[str]) -> set[str]:
    """webhooks/admission/jobs/mutate/mutate_job.go `patchDefaultPlugins`: tensorflow,
    mpi, pytorch and ray bring svc; mpi brings ssh."""
    if plugins & {"tensorflow", "mpi", "pytorch", "ray"}:
        plugins |= {"svc"}
    if "mpi" in plugins:
        plugins |= {"ssh"}
    return plugins


@dataclass(frozen=True)
class Row:
    resource: registry.ResourceType
    check: Callable[[Written, dict[str, Any]], None]
    subresource: str | None = None
    #: the jobs expected to have at least one such object
    jobs: frozenset[str] = frozenset()


ROWS = [
    # job_controller_actions.go `syncJob`: no pods while the PodGroup is Pending (too-big)
    pytest.param(Row(registry.POD, check_pod, jobs=frozenset(JOBS) - {"too-big"}), id="Pod"),
    pytest.param(Row(registry.PODGROUP, check_podgroup, jobs=frozenset(JOBS)), id="PodGroup"),
    pytest.param(Row(registry.SERVICE, check_service, jobs=frozenset({"plugins", "aborted", "tensorflow", "pytorch", "mpi"})), id="Service"),
    pytest.param(Row(registry.CONFIGMAP, check_configmap, jobs=frozenset({"plugins", "aborted", "tensorflow", "pytorch", "mpi"})), id="ConfigMap"),
    pytest.param(Row(registry.NETWORK_POLICY, check_networkpolicy, jobs=frozenset({"plugins", "aborted", "tensorflow", "pytorch", "mpi"})), id="NetworkPolicy"),
    pytest.param(Row(registry.SECRET, check_secret, jobs=frozenset({"plugins", "mpi"})), id="Secret"),
    pytest.param(Row(registry.PVC, check_claim, jobs=frozenset({"plugins"})), id="PersistentVolumeClaim"),
    pytest.param(Row(registry.COMMAND, check_command, jobs=frozenset({"plugins", "aborted"})), id="Command"),
    pytest.param(Row(registry.EVENT, check_event, jobs=frozenset({"unplaceable", "aborted", "retried", "plugins"})), id="Event"),
]  # fmt: skip


@pytest.mark.parametrize("row", ROWS)
async def test_every_object_is_named_as_volcano_names_it(written: Written, row: Row) -> None:
    objects = written.created(row.resource)
    for obj in objects:
        row.check(written, obj)
    owners = (
        {o["involvedObject"]["name"] for o in objects}
        if row.resource is registry.EVENT
        else {written.job_of_owner(o) for o in objects}
    )
    assert owners >= row.jobs


async def test_every_status_write_is_volcanos_job_status(written: Written) -> None:
    writes = written.lavalogs(registry.JOB, "status")
    for w in writes:
        check_status(written, w.stored)
    ended = {w.stored["metadata"]["name"]: job_phase(w.stored) for w in writes}
    assert ended == ENDS
    plugins = [w.stored for w in writes if w.stored["metadata"]["name"] == "plugins"]
    generated = next(
        v["volumeClaimName"] for v in plugins[-1]["spec"]["volumes"] if "volumeClaim" in v
    )
    claims = {f"volume-pvc-{c}": c for c in (generated, EXISTING_CLAIM)}
    # the plugins' `OnJobAdd` adds their entries, job_controller_actions.go `killJob`
    # (`pluginOnJobDelete`) takes them out when the whole job is killed; claims stay
    running = next(s for s in plugins if job_phase(s) == "Running")
    assert running["status"]["controlledResources"] == {
        "plugin-svc": "svc",
        "plugin-ssh": "ssh",
        "plugin-env": "env",
        **claims,
    }
    assert plugins[-1]["status"]["controlledResources"] == claims


async def test_aborting_and_pending_say_so_in_volcanos_events(written: Written) -> None:
    """job_controller_handler.go: a Command is `CommandIssued` and its action
    `ExecuteAction`; job_controller_actions.go `recordPodGroupEvent`: a gang the scheduler
    marked Unschedulable is `PodGroupPending`; one it never enqueued has no condition,
    so no Event either."""
    system = written.system
    assert events_of(system, "aborted", "CommandIssued")
    assert any("AbortJob" in e["message"] for e in events_of(system, "aborted", "ExecuteAction"))
    assert [e["type"] for e in events_of(system, "unplaceable", "PodGroupPending")] == ["Warning"]
    assert not events_of(system, "too-big", "PodGroupPending")
