"""Each decision carried out against the simulated cluster, twice: one result, the right one."""

from __future__ import annotations

import asyncio
import base64
from typing import Any

import msgspec
import pytest
from msgspec.structs import replace

from lavalog.controller.actuator.core import paths
from lavalog.controller.actuator.core.held_jobs import uid_of
from lavalog.controller.actuator.service.apply import Applier
from lavalog.controller.actuator.service.counters import Counters
from lavalog.controller.actuator.service.job_informer import JobInformer
from lavalog.controller.kube import Kube
from lavalog.events.decisions import (
    ActionDecided,
    JobAdmitted,
    JobDelete,
    JobRejected,
    PhaseChanged,
    PluginResourcesEnsure,
    PodGroupCreate,
    PodGroupDelete,
    PodRef,
    PodsCreate,
    PodsKill,
    PolicyRef,
    StatusWrite,
    TimerScheduled,
)
from lavalog.events.observations import CreateFailed
from lavalog.events.volcano.api import FieldError, JobSpec, JobState, JobStatus
from lavalog.simulator.server import SimulatedCluster
from tests.actuator.support import (
    EVENTS,
    NAMESPACE,
    PODGROUPS,
    create,
    decision,
    events_of,
    items,
    job_path,
    pods_path,
    read,
    status,
    submit,
    tf_pods,
)

pytestmark = pytest.mark.integration


async def twice(applier: Applier, *decisions: Any) -> None:
    for _ in range(2):
        for one in decisions:
            await applier.apply(one)


async def test_pods_are_created_once_with_volcano_labels_and_the_job_as_owner(
    kube: Kube, applier: Applier, counters: Counters
) -> None:
    job = await submit(kube)
    await twice(applier, tf_pods(job, version=2))

    pods = await items(kube, pods_path())
    assert sorted(p["metadata"]["name"] for p in pods) == [
        "tensorflow-dist-mnist-ps-0",
        "tensorflow-dist-mnist-worker-0",
        "tensorflow-dist-mnist-worker-1",
    ]
    worker = next(p for p in pods if p["metadata"]["name"].endswith("worker-1"))
    assert worker["metadata"]["ownerReferences"][0]["uid"] == job["metadata"]["uid"]
    assert worker["metadata"]["labels"]["volcano.sh/task-spec"] == "worker"
    assert worker["metadata"]["annotations"]["volcano.sh/job-version"] == "2"
    assert worker["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == (
        "tensorflow-dist-mnist-pg"
    )
    assert (counters.applied, counters.failed) == (2, 0)


async def test_decisions_about_a_replaced_job_are_skipped(
    kube: Kube, applier: Applier, counters: Counters
) -> None:
    old = await submit(kube)
    await kube.request("DELETE", job_path(old))
    new = await submit(kube)
    assert new["metadata"]["uid"] != old["metadata"]["uid"]
    running = JobStatus(state=JobState(phase="Running"))

    await applier.apply(tf_pods(old))
    await applier.apply(decision(StatusWrite, old, status=running))
    await applier.apply(decision(PodGroupCreate, old, podgroup="pg", min_member=3, queue="default"))

    assert await items(kube, pods_path()) == []
    assert await items(kube, PODGROUPS) == []
    assert "status" not in await read(kube, job_path(new))
    assert counters.skipped == 3


async def test_podgroup_is_created_once_then_updated_to_the_new_gang_size(
    kube: Kube, applier: Applier
) -> None:
    job = await submit(kube)
    create_pg = decision(
        PodGroupCreate,
        job,
        podgroup="tf-pg",
        min_member=3,
        queue="default",
        min_task_member={"ps": 1, "worker": 2},
    )
    await twice(applier, create_pg)
    [podgroup] = await items(kube, PODGROUPS)
    assert podgroup["spec"]["minMember"] == 3
    assert podgroup["spec"]["minTaskMember"] == {"ps": 1, "worker": 2}
    assert podgroup["spec"]["minResources"]["cpu"] == "2500m"
    assert podgroup["metadata"]["ownerReferences"][0]["uid"] == job["metadata"]["uid"]

    smaller = decision(
        PodGroupCreate,
        job,
        podgroup="tf-pg",
        min_member=2,
        queue="default",
        min_task_member={"ps": 1, "worker": 1},
    )
    await twice(applier, smaller)
    [podgroup] = await items(kube, PODGROUPS)
    assert podgroup["spec"]["minMember"] == 2
    assert podgroup["spec"]["minTaskMember"] == {"ps": 1, "worker": 1}

    await twice(applier, decision(PodGroupDelete, job, podgroup="tf-pg"))
    assert await items(kube, PODGROUPS) == []


async def test_a_podgroup_delete_carried_out_again_leaves_the_next_runs_podgroup(
    kube: Kube, applier: Applier
) -> None:
    """A resumed job makes its PodGroup anew under the same name; the delete of the run
    before, carried out again after a crash, names the old uid and leaves it alone."""
    job = await submit(kube)
    create_pg = decision(PodGroupCreate, job, podgroup="tf-pg", min_member=3, queue="default")
    await applier.apply(create_pg)
    [first] = await items(kube, PODGROUPS)
    delete = decision(PodGroupDelete, job, podgroup="tf-pg", podgroup_uid=uid_of(first))
    await applier.apply(delete)
    await applier.apply(create_pg)  # the resumed run's
    [second] = await items(kube, PODGROUPS)

    await applier.apply(delete)

    assert [uid_of(pg) for pg in await items(kube, PODGROUPS)] == [uid_of(second)]
    assert uid_of(second) != uid_of(first)


async def test_plugin_resources_are_created_once_and_the_hosts_follow_scaling(
    kube: Kube, applier: Applier
) -> None:
    plugins = {
        "mpi": ["--master=mpimaster", "--worker=mpiworker"],
        "svc": ["--disable-network-policy"],
    }
    job = await submit(kube, "mpi", plugins=plugins)
    ensure = decision(
        PluginResourcesEnsure, job, plugins=plugins, task_replicas={"mpimaster": 1, "mpiworker": 2}
    )
    await twice(applier, ensure)
    configmap_path = paths.named("v1", "ConfigMap", NAMESPACE, "lm-mpi-job-svc")
    secret_path = paths.named("v1", "Secret", NAMESPACE, "lm-mpi-job-ssh")
    assert (await read(kube, configmap_path))["data"]["VC_MPIWORKER_NUM"] == "2"
    secret = await read(kube, secret_path)
    assert base64.b64decode(secret["data"]["id_rsa.pub"]) == b"ssh-rsa AAAAfake\n"
    service = await read(kube, paths.named("v1", "Service", NAMESPACE, "lm-mpi-job"))
    assert service["spec"]["clusterIP"] == "None"

    scaled = decision(
        PluginResourcesEnsure, job, plugins=plugins, task_replicas={"mpimaster": 1, "mpiworker": 3}
    )
    await twice(applier, scaled)
    assert (await read(kube, configmap_path))["data"]["VC_MPIWORKER_NUM"] == "3"
    kept = await read(kube, secret_path)
    assert kept["metadata"]["resourceVersion"] == secret["metadata"]["resourceVersion"]


async def test_plugin_objects_are_not_made_again_for_a_run_that_is_over(
    kube: Kube, applier: Applier
) -> None:
    """An ensure carried out again after the run ended (its objects removed then) makes
    nothing; once a resumed run's status is written, the same ensure makes them."""
    plugins = {"svc": ["--disable-network-policy"]}
    job = await submit(kube, "mpi", plugins=plugins)
    ensure = decision(
        PluginResourcesEnsure, job, plugins=plugins, task_replicas={"mpimaster": 1, "mpiworker": 2}
    )
    service_path = paths.named("v1", "Service", NAMESPACE, "lm-mpi-job")
    await applier.apply(decision(StatusWrite, job, status=status("Aborted", 0)))

    await applier.apply(ensure)

    assert await items(kube, paths.collection("v1", "Service", NAMESPACE)) == []
    await applier.apply(decision(StatusWrite, job, status=status("Restarting", 0, retries=1)))
    await applier.apply(ensure)
    assert (await read(kube, service_path))["spec"]["clusterIP"] == "None"


async def test_pods_a_scale_down_removed_are_not_created_again(
    kube: Kube, applier: Applier
) -> None:
    """A create carried out again after a scale-down killed its pods (same job version:
    the version check cannot tell) makes only the pods the spec still has (bench/chaos.py
    saw `scale-081-worker-2 v0` created twice)."""
    job = await submit(kube)
    scaled = await read(kube, job_path(job))
    scaled["spec"]["tasks"][1]["replicas"] = 1  # worker: 2 -> 1
    await kube.request("PUT", job_path(job), body=scaled)

    await twice(applier, tf_pods(job))

    names = sorted(p["metadata"]["name"] for p in await items(kube, pods_path()))
    assert names == ["tensorflow-dist-mnist-ps-0", "tensorflow-dist-mnist-worker-0"]


async def test_pods_kill_deletes_only_the_incarnation_it_names(
    kube: Kube, applier: Applier, counters: Counters
) -> None:
    job = await submit(kube)
    pod = {
        "metadata": {"name": "tensorflow-dist-mnist-worker-0"},
        "spec": {"schedulerName": "none", "containers": [{"name": "c", "image": "x"}]},
    }
    first = await create(kube, pods_path(), pod)
    await kube.request("DELETE", f"{pods_path()}/{first['metadata']['name']}")
    second = await create(kube, pods_path(), pod)
    ref = PodRef(name="tensorflow-dist-mnist-worker-0", task="worker", index=0)

    stale = PodRef(name=ref.name, task="worker", index=0, uid=first["metadata"]["uid"])
    await twice(applier, decision(PodsKill, job, reason="RestartTask", pods=(stale,)))
    [survivor] = await items(kube, pods_path())
    assert survivor["metadata"]["uid"] == second["metadata"]["uid"]

    current = PodRef(name=ref.name, task="worker", index=0, uid=second["metadata"]["uid"])
    await twice(applier, decision(PodsKill, job, reason="RestartTask", pods=(current,)))
    assert await items(kube, pods_path()) == []
    assert (counters.applied, counters.failed) == (4, 0)


async def test_status_is_written_once_and_lands_despite_a_concurrent_writer(
    kube: Kube, applier: Applier
) -> None:
    job = await submit(kube)
    await twice(applier, decision(StatusWrite, job, status=status("Pending", 0)))
    written = await read(kube, job_path(job))
    assert written["status"]["state"]["phase"] == "Pending"
    assert written["status"]["minAvailable"] == 3

    # Someone else writes the Job: the actuator's cached resourceVersion goes stale.
    patch = {"metadata": {"labels": {"touched": "yes"}}}
    await kube.request(
        "PATCH", job_path(job), body=patch, content_type="application/merge-patch+json"
    )
    await applier.apply(decision(StatusWrite, job, status=status("Running", 3, retries=1)))

    landed = await read(kube, job_path(job))
    assert landed["metadata"]["labels"]["touched"] == "yes"
    assert landed["status"]["state"] == {
        "phase": "Running",
        "reason": "",
        "message": "",
        "lastTransitionTime": "2027-01-15T08:00:00Z",
    }
    assert (landed["status"]["running"], landed["status"]["retryCount"]) == (3, 1)
    assert landed["status"]["taskStatusCount"] == {"worker": {"phase": {"Running": 3}}}

    # A replay of the same write changes nothing.
    version = landed["metadata"]["resourceVersion"]
    await applier.apply(decision(StatusWrite, job, status=status("Running", 3, retries=1)))
    assert (await read(kube, job_path(job)))["metadata"]["resourceVersion"] == version


async def test_a_status_write_keeps_what_others_wrote_in_the_status(
    kube: Kube, applier: Applier
) -> None:
    job = await submit(kube)
    other = {"controlledResources": {"gateway-route": "r1", "plugin-gone": "gone"}}
    await kube.request(
        "PATCH",
        job_path(job) + "/status",
        body={"status": other},
        content_type="application/merge-patch+json",
    )
    mine = replace(status("Running", 3), controlled_resources={"plugin-svc": "svc"})
    await applier.apply(decision(StatusWrite, job, status=mine))

    landed = (await read(kube, job_path(job)))["status"]
    assert landed["controlledResources"] == {"gateway-route": "r1", "plugin-svc": "svc"}
    assert landed["state"]["phase"] == "Running"


async def test_actions_phases_and_rejections_become_one_event_each(
    kube: Kube, applier: Applier
) -> None:
    """Phase changes with `--phase-events`; without it they are no Event."""
    job = await submit(kube)
    action = decision(
        ActionDecided,
        job,
        action="RestartTask",
        trigger="PodFailed",
        phase="Running",
        task="worker",
        pod="tensorflow-dist-mnist-worker-1",
        exit_code=3,
        policy=PolicyRef(level="task", index=1, task="worker"),
    )
    phase = decision(
        PhaseChanged,
        job,
        previous="Running",
        phase="Restarting",
        reason="RestartTask",
        retry_count=1,
        version=1,
    )
    rejected = decision(
        JobRejected,
        job,
        generation=2,
        errors=(
            FieldError("spec.minAvailable", "must not be greater than the total replicas"),
            FieldError("spec.tasks[1].policies[0].exitCode", "0 is not a valid error code"),
        ),
    )
    timer = decision(
        TimerScheduled, job, timer_id="t1", fire_at=1.0, action="RestartJob", trigger="PodFailed"
    )
    await twice(applier, phase)
    await applier.events.idle()
    assert events_of(await items(kube, EVENTS), job) == []
    reporting = Applier(applier._api, Counters(), phase_events=True)
    writer = asyncio.create_task(reporting.events.run())
    await twice(reporting, action, phase, rejected, timer)
    await reporting.events.idle()
    writer.cancel()

    events = {e["message"][:28]: e for e in events_of(await items(kube, EVENTS), job)}
    assert sorted((e["reason"], m) for m, e in events.items()) == [
        ("ExecuteAction", "Execute action RestartJob af"),
        ("ExecuteAction", "Start to execute action Rest"),
        ("InvalidSpec", "spec generation 2: spec.minA"),
        ("Restarting", "Running -> Restarting: Resta"),
    ]
    assert len(events_of(await items(kube, EVENTS), job)) == 4
    restart = events["Start to execute action Rest"]
    assert restart["type"] == "Normal"
    assert restart["source"] == {"component": "vc-controller-manager"}
    assert restart["involvedObject"]["name"] == "tensorflow-dist-mnist"
    for part in (
        "PodFailed",
        "tensorflow-dist-mnist-worker-1",
        "exit code 3",
        "task worker policy 1",
    ):
        assert part in restart["message"]
    invalid = events["spec generation 2: spec.minA"]
    assert invalid["type"] == "Warning"
    assert "spec.minAvailable: must not be greater" in invalid["message"]
    assert "spec.tasks[1].policies[0].exitCode: 0 is not" in invalid["message"]


async def test_job_delete_removes_only_its_incarnation(kube: Kube, applier: Applier) -> None:
    old = await submit(kube)
    await twice(applier, decision(JobDelete, old, reason="ttlSecondsAfterFinished elapsed"))
    assert await items(kube, paths.collection("batch.volcano.sh/v1alpha1", "Job", NAMESPACE)) == []

    new = await submit(kube)
    await applier.apply(decision(JobDelete, old, reason="ttlSecondsAfterFinished elapsed"))
    assert (await read(kube, job_path(new)))["metadata"]["uid"] == new["metadata"]["uid"]


async def test_a_refused_create_is_reported_in_volcanos_words_and_to_the_decider(
    kube: Kube, applier: Applier, counters: Counters, refusals: list[CreateFailed]
) -> None:
    """Volcano's syncJob: a Warning FailedCreate "Error creating pods: [...]" per refusal,
    and the job requeued: here a CreateFailed fact, from which the decider retries. The
    decision is done: the other pods were created."""
    # A valid Job whose worker pod's name is too long for a name (253): 422 Invalid.
    long = "j" * 245
    job = await submit(kube, name=long)
    bad = decision(
        PodsCreate,
        job,
        job_version=1,
        podgroup="pg",
        pods=(
            PodRef(name=f"{long}-worker-0", task="worker", index=0),
            PodRef(name=f"{long}-ps-0", task="ps", index=0),
        ),
    )
    await twice(applier, bad)
    await applier.events.idle()

    assert (counters.refused, counters.failed) == (2, 0)
    # the same decision twice: one Event, counted twice
    [warning] = events_of(await items(kube, EVENTS), job)
    assert (warning["type"], warning["reason"], warning["count"]) == ("Warning", "FailedCreate", 2)
    refused = f"{long}-worker-0"
    assert warning["message"].startswith(
        f'Error creating pods: [failed to create pod {refused}, err: Pod "{refused}" is invalid'
    )
    assert bad.id in warning["message"]
    assert [
        (r.id, r.decision, r.object_kind, r.names, r.job_version, r.code) for r in refusals
    ] == [(f"{bad.id}/refused", bad.id, "Pod", (refused,), 1, 422)] * 2
    # The good pod of the same decision was created all the same.
    assert [p["metadata"]["name"] for p in await items(kube, pods_path())] == [f"{long}-ps-0"]


async def test_transient_api_failures_are_retried_until_the_decision_is_done(
    sim_cluster: SimulatedCluster, kube: Kube, applier: Applier, counters: Counters
) -> None:
    job = await submit(kube)
    sim_cluster.admin.set_api_faults(error_rate=0.5, throttle_rate=0.3)
    await applier.apply(tf_pods(job))
    await applier.apply(decision(StatusWrite, job, status=status("Pending", 0)))
    sim_cluster.admin.set_api_faults(error_rate=0, throttle_rate=0)

    assert len(await items(kube, pods_path())) == 3
    assert (await read(kube, job_path(job)))["status"]["state"]["phase"] == "Pending"
    assert counters.retried > 0
    assert (counters.applied, counters.failed) == (2, 0)


async def test_the_podgroup_comes_after_the_jobs_claims_named_created_or_looked_for(
    kube: Kube, applier: Applier, counters: Counters
) -> None:
    """Volcano's `createJobIOIfNotExist`: the claim of a `volumeClaim` volume is named in
    the Job's spec (`volumeClaimName`) and created, owned by the Job; a claim the user named
    and that does not exist is reported (PVCError) and its pods will wait for it."""
    claim = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    job = await submit(
        kube,
        volumes=[
            {"mountPath": "/data", "volumeClaim": claim},
            {"mountPath": "/in", "volumeClaimName": "not-there-yet"},
        ],
    )
    create_pg = decision(
        PodGroupCreate,
        job,
        podgroup=f"tensorflow-dist-mnist-{job['metadata']['uid']}",
        min_member=3,
        queue="default",
    )
    await twice(applier, create_pg)
    await applier.events.idle()

    stored = await read(kube, job_path(job))
    named, wanted = stored["spec"]["volumes"]
    assert named["volumeClaimName"].startswith("tensorflow-dist-mnist-pvc-")
    assert wanted == {"mountPath": "/in", "volumeClaimName": "not-there-yet"}
    (pvc,) = await items(kube, paths.collection("v1", "PersistentVolumeClaim", NAMESPACE))
    assert pvc["metadata"]["name"] == named["volumeClaimName"]
    assert pvc["metadata"]["ownerReferences"][0]["uid"] == job["metadata"]["uid"]
    assert pvc["spec"]["accessModes"] == ["ReadWriteOnce"]
    (missing,) = [e for e in events_of(await items(kube, EVENTS), job) if e["reason"] == "PVCError"]
    assert missing["type"] == "Warning"
    assert missing["message"].startswith("pvc not-there-yet is not found")
    assert len(await items(kube, PODGROUPS)) == 1
    assert (counters.applied, counters.failed) == (2, 0)


async def test_pods_of_a_job_held_at_the_decisions_generation_are_created_without_reading_it(
    sim_cluster: SimulatedCluster, kube: Kube, applier: Applier
) -> None:
    job = await submit(kube)
    generation = job["metadata"]["generation"]
    await applier.apply(decision(StatusWrite, job, status=status("Pending", 0)))
    reads = sim_cluster.api_calls["get jobs"]

    await applier.apply(replace(tf_pods(job), job_generation=generation))

    assert len(await items(kube, pods_path())) == 3
    assert sim_cluster.api_calls["get jobs"] == reads


async def test_pods_decided_from_a_newer_spec_than_the_one_held_read_the_job(
    sim_cluster: SimulatedCluster, kube: Kube, applier: Applier
) -> None:
    job = await submit(kube)
    await applier.apply(decision(StatusWrite, job, status=status("Pending", 0)))
    labelled = [
        {**task, "template": {**task["template"], "metadata": {"labels": {"spec": "two"}}}}
        for task in job["spec"]["tasks"]
    ]
    changed = await kube.request(
        "PATCH",
        job_path(job),
        body={"spec": {"tasks": labelled}},
        content_type="application/merge-patch+json",
    )
    generation = msgspec.json.decode(changed)["metadata"]["generation"]
    assert generation > job["metadata"]["generation"]
    reads = sim_cluster.api_calls["get jobs"]

    await applier.apply(replace(tf_pods(job), job_generation=generation))

    assert sim_cluster.api_calls["get jobs"] == reads + 1
    assert {p["metadata"]["labels"].get("spec") for p in await items(kube, pods_path())} == {"two"}


async def test_after_a_handover_pods_of_a_run_another_member_ended_are_not_created(
    kube: Kube, applier: Applier
) -> None:
    """Another member, which had the partition meanwhile, moved the Job to version 1; the
    old decision carried out again here must be checked against the Job as it is."""
    job = await submit(kube)
    await applier.apply(decision(StatusWrite, job, status=status("Running", 3)))
    other = Applier(applier._api, Counters())  # the member that had the partition meanwhile
    await other.apply(decision(StatusWrite, job, status=status("Restarting", 0, retries=1)))
    applier.forget_jobs()

    await applier.apply(
        replace(tf_pods(job, version=0), job_generation=job["metadata"]["generation"])
    )

    assert await items(kube, pods_path()) == []


async def test_jobs_listed_at_a_takeover_spare_each_jobs_own_read(
    sim_cluster: SimulatedCluster, kube: Kube, applier: Applier
) -> None:
    """One list instead of a read per job: a status write, a PodGroup and pods of a Job
    held at the decision's generation need no read of it."""
    jobs = [await submit(kube, name=f"tf-{n}") for n in range(3)]
    await JobInformer(applier._api, applier.jobs, "default").list()
    assert len(applier.jobs) == 3
    reads = sim_cluster.api_calls["get jobs"]

    for job in jobs:
        name, generation = job["metadata"]["name"], job["metadata"]["generation"]
        await applier.apply(decision(StatusWrite, job, status=status("Pending", 0)))
        await applier.apply(
            decision(
                PodGroupCreate,
                job,
                podgroup=f"{name}-pg",
                min_member=3,
                queue="default",
                job_generation=generation,
            )
        )
        await applier.apply(replace(tf_pods(job), job_generation=generation))

    assert sim_cluster.api_calls["get jobs"] == reads
    assert len(await items(kube, PODGROUPS)) == 3 and len(await items(kube, pods_path())) == 9
    for job in jobs:
        assert (await read(kube, job_path(job)))["status"]["state"]["phase"] == "Pending"


async def test_an_admission_has_nothing_to_carry_out_and_is_counted_as_ignored(
    kube: Kube, applier: Applier, counters: Counters
) -> None:
    """The decider's own record of the spec it runs: no API call, yet taken off its lane
    (a consumer waiting for every decision to be handled must not wait for it forever)."""
    job = await submit(kube)
    admitted = decision(JobAdmitted, job, generation=1, spec=JobSpec())
    before = await items(kube, EVENTS)

    await twice(applier, admitted)

    assert (counters.ignored, counters.applied, counters.handled) == (2, 0, 2)
    assert await items(kube, EVENTS) == before


async def test_the_decisions_about_a_deleted_job_cost_one_read_of_it(
    sim_cluster: SimulatedCluster, kube: Kube, applier: Applier, counters: Counters
) -> None:
    """Volcano drops a request whose Job is not in its cache; here the first decision
    finds the Job gone, and those queued behind it (its pods' ends) are skipped unread."""
    job = await submit(kube)
    running = await submit(kube, name="still-running")
    await applier.apply(decision(PodGroupCreate, job, podgroup="pg", min_member=3, queue="default"))
    await kube.request("DELETE", job_path(job))
    applier.forget_jobs()  # not held: the next decision reads it
    calls = sum(sim_cluster.api_calls.values())

    await applier.apply(decision(StatusWrite, job, status=status("Running", 2)))
    assert sum(sim_cluster.api_calls.values()) == calls + 1  # the read that found it gone
    for later in (
        decision(StatusWrite, job, status=status("Running", 1)),
        tf_pods(job),
        decision(
            PodsKill,
            job,
            reason="job gone",
            pods=(PodRef(name="tensorflow-dist-mnist-ps-0", task="ps", index=0),),
        ),
        decision(PodGroupDelete, job, podgroup="pg"),
    ):
        await applier.apply(later)
    assert sum(sim_cluster.api_calls.values()) == calls + 1
    assert counters.skipped == 5

    await applier.apply(decision(StatusWrite, running, status=status("Running", 3)))
    assert (await read(kube, job_path(running)))["status"]["running"] == 3
