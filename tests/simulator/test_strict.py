"""The simulated API server is as strict as a real one about fields: custom resources by
their CRD schemas in deploy/crds (generated from volcano-sh/apis), core kinds by their
Go types. Unknown fields are pruned (a Warning per field by default, a 400 with
fieldValidation=Strict), invalid values are a 422 naming each field, defaults are set."""

from __future__ import annotations

import json
import re
from typing import Any

import aiohttp
import pytest
import yaml

from lavalog.apimachinery import crdgen, crds
from lavalog.simulator import registry
from lavalog.simulator.server import SimulatedCluster

JOB: dict[str, Any] = {
    "apiVersion": "batch.volcano.sh/v1alpha1",
    "kind": "Job",
    "metadata": {"name": "tf"},
    "spec": {
        "minAvailable": 1,
        "schedulerName": "volcano",
        "tasks": [
            {
                "name": "worker",
                "replicas": 1,
                "template": {
                    "spec": {
                        "containers": [
                            {
                                "name": "c",
                                "image": "x",
                                "command": ["sleep", "1"],
                                "resources": {"requests": {"cpu": 1, "memory": "1Gi"}},
                            }
                        ]
                    }
                },
            }
        ],
    },
}
JOBS = "/apis/batch.volcano.sh/v1alpha1/namespaces/default/jobs"
COMMANDS = "/apis/bus.volcano.sh/v1alpha1/namespaces/default/commands"
PODS = "/api/v1/namespaces/default/pods"


async def send(
    cluster: SimulatedCluster, method: str, path: str, body: Any = None, **headers: str
) -> tuple[int, Any, list[str]]:
    """One raw request: status, decoded body and the Warning headers."""
    async with (
        aiohttp.ClientSession() as session,
        session.request(
            method,
            cluster.url + path,
            data=None if body is None else json.dumps(body),
            headers={"Content-Type": "application/json", **headers},
        ) as response,
    ):
        return response.status, await response.json(), response.headers.getall("Warning", [])


def with_spec(**fields: Any) -> dict[str, Any]:
    job: dict[str, Any] = json.loads(json.dumps(JOB))
    job["spec"].update(fields)
    return job


def test_checked_in_crds_are_what_the_generator_writes(tmp_path) -> None:
    assert crdgen.main(["--check"]) == 0, "run: python -m lavalog.apimachinery.crdgen"
    assert crdgen.main(["--out", str(tmp_path)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        p.name for p in crdgen.SOURCE_DIR.glob("*.yaml")
    )


def test_crds_declare_volcano_names_scopes_and_subresources() -> None:
    defs = crds.definitions()
    assert set(defs) == {
        "jobs.batch.volcano.sh",
        "commands.bus.volcano.sh",
        "podgroups.scheduling.volcano.sh",
        "queues.scheduling.volcano.sh",
    }
    (job,) = defs["jobs.batch.volcano.sh"]["spec"]["versions"]
    (pg,) = defs["podgroups.scheduling.volcano.sh"]["spec"]["versions"]
    assert job["subresources"] == {"status": {}}
    assert pg["subresources"] == {}  # Volcano's PodGroup CRD has no status subresource
    assert defs["queues.scheduling.volcano.sh"]["spec"]["scope"] == "Cluster"
    assert defs["jobs.batch.volcano.sh"]["spec"]["names"]["shortNames"] == ["vcjob", "vj"]
    # the served kinds are these definitions
    assert registry.JOB.short_names == ("vcjob", "vj") and registry.JOB.has_status
    assert not registry.PODGROUP.has_status and not registry.QUEUE.namespaced


def test_crd_schemas_pin_volcano_field_names() -> None:
    job = crds.schema_of("jobs.batch.volcano.sh")["properties"]
    assert set(job["spec"]["properties"]) == {
        "schedulerName",
        "minAvailable",
        "volumes",
        "tasks",
        "policies",
        "plugins",
        "runningEstimate",
        "queue",
        "maxRetry",
        "ttlSecondsAfterFinished",
        "priorityClassName",
        "minSuccess",
        "networkTopology",
    }
    task = job["spec"]["properties"]["tasks"]["items"]["properties"]
    assert {
        "name",
        "replicas",
        "minAvailable",
        "template",
        "policies",
        "maxRetry",
        "dependsOn",
    } <= set(task)
    assert set(job["status"]["properties"]["state"]["properties"]) == {
        "phase",
        "reason",
        "message",
        "lastTransitionTime",
    }
    command = crds.schema_of("commands.bus.volcano.sh")["properties"]
    assert set(command) == {
        "apiVersion",
        "kind",
        "metadata",
        "action",
        "target",
        "reason",
        "message",
    }
    pg = crds.schema_of("podgroups.scheduling.volcano.sh")["properties"]
    assert {"minMember", "minResources", "queue", "priorityClassName"} <= set(
        pg["spec"]["properties"]
    )
    condition = pg["status"]["properties"]["conditions"]["items"]["properties"]
    assert set(condition) == {
        "type",
        "status",
        "transitionID",
        "lastTransitionTime",
        "reason",
        "message",
    }


def test_crd_files_are_valid_structural_manifests() -> None:
    for path in crdgen.SOURCE_DIR.glob("*.yaml"):
        crd = yaml.safe_load(path.read_text())
        assert crd["apiVersion"] == "apiextensions.k8s.io/v1"
        assert crd["kind"] == "CustomResourceDefinition"
        assert not re.search(r"[&*]id\d+", path.read_text()), "a CRD may not use YAML aliases"

        def walk(node: Any, where: str) -> None:
            if isinstance(node, dict):
                if "properties" in node or "additionalProperties" in node:
                    assert node.get("type") == "object", where  # structural: typed nodes
                for key, value in node.items():
                    walk(value, f"{where}.{key}")
            elif isinstance(node, list):
                for item in node:
                    walk(item, where)

        walk(crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"], path.name)


async def test_unknown_fields_of_a_job_are_pruned_with_a_warning(sim_cluster) -> None:
    body = with_spec(bogus=1)
    body["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["colour"] = "red"
    body["metadata"]["nonsense"] = True
    status, job, warnings = await send(sim_cluster, "POST", JOBS, body)
    assert status == 201, job
    assert "bogus" not in job["spec"] and "nonsense" not in job["metadata"]
    assert "colour" not in job["spec"]["tasks"][0]["template"]["spec"]["containers"][0]
    assert sorted(warnings) == sorted(
        [
            '299 - "unknown field \\"metadata.nonsense\\""',
            '299 - "unknown field \\"spec.bogus\\""',
            '299 - "unknown field \\"spec.tasks[0].template.spec.containers[0].colour\\""',
        ]
    )
    status, stored, _ = await send(sim_cluster, "GET", f"{JOBS}/tf")
    assert "bogus" not in stored["spec"]
    # the CRD's defaults are set, as a real API server sets them
    assert stored["spec"]["maxRetry"] == 3 and stored["spec"]["queue"] == "default"


async def test_strict_field_validation_rejects_unknown_fields(sim_cluster) -> None:
    status, answer, _ = await send(
        sim_cluster, "POST", JOBS + "?fieldValidation=Strict", with_spec(bogus=1)
    )
    assert status == 400 and answer["reason"] == "BadRequest"
    assert 'strict decoding error: unknown field "spec.bogus"' in answer["message"]
    status, _, _ = await send(sim_cluster, "GET", f"{JOBS}/tf")
    assert status == 404
    status, answer, _ = await send(sim_cluster, "POST", JOBS + "?fieldValidation=Bogus", JOB)
    assert status == 400


async def test_a_command_naming_targetObject_loses_it(sim_cluster) -> None:
    """Volcano's field is `target`; `targetObject` (the Go field name) is pruned."""
    command: dict[str, Any] = {
        "apiVersion": "bus.volcano.sh/v1alpha1",
        "kind": "Command",
        "metadata": {"name": "abort-tf"},
        "action": "AbortJob",
        "targetObject": {
            "apiVersion": "batch.volcano.sh/v1alpha1",
            "kind": "Job",
            "name": "tf",
            "uid": "u",
        },
    }
    status, stored, warnings = await send(sim_cluster, "POST", COMMANDS, command)
    assert status == 201 and "targetObject" not in stored
    assert warnings == ['299 - "unknown field \\"targetObject\\""']
    command["metadata"]["name"] = "abort-tf-2"
    status, answer, _ = await send(
        sim_cluster, "POST", COMMANDS + "?fieldValidation=Strict", command
    )
    assert status == 400 and 'unknown field "targetObject"' in answer["message"]


@pytest.mark.parametrize(
    ("change", "field", "reason"),
    [
        ({"minAvailable": "two"}, "spec.minAvailable", "FieldValueTypeInvalid"),
        ({"minAvailable": -1}, "spec.minAvailable", "FieldValueInvalid"),
        ({"queue": "Not_A_Name"}, "spec.queue", "FieldValueInvalid"),
        ({"tasks": []}, "spec.tasks", "FieldValueInvalid"),
        (
            {"policies": [{"event": "PodExploded", "action": "RestartJob"}]},
            "spec.policies[0].event",
            "FieldValueNotSupported",
        ),
        (
            {"volumes": [{"volumeClaimName": "data"}]},
            "spec.volumes[0].mountPath",
            "FieldValueRequired",
        ),
    ],
)
async def test_invalid_values_are_422_with_the_field_path(
    sim_cluster, change, field, reason
) -> None:
    status, answer, _ = await send(sim_cluster, "POST", JOBS, with_spec(**change))
    assert status == 422 and answer["reason"] == "Invalid", answer
    assert answer["details"]["kind"] == "Job" and answer["details"]["group"] == "batch.volcano.sh"
    causes = answer["details"]["causes"]
    assert [(c["field"], c["reason"]) for c in causes] == [(field, reason)]
    assert answer["message"].startswith(f'Job.batch.volcano.sh "tf" is invalid: {field}: ')


async def test_a_pod_template_is_checked_as_a_pod_spec(sim_cluster) -> None:
    body = with_spec()
    body["spec"]["tasks"][0]["template"]["spec"]["containers"][0].pop("name")
    status, answer, _ = await send(sim_cluster, "POST", JOBS, body)
    assert status == 422
    assert [c["field"] for c in answer["details"]["causes"]] == [
        "spec.tasks[0].template.spec.containers[0].name"
    ]


async def test_status_writes_are_validated_too(sim_cluster) -> None:
    status, job, _ = await send(sim_cluster, "POST", JOBS, JOB)
    assert status == 201
    job["status"] = {"state": {"phase": "Exploded"}}
    status, answer, _ = await send(sim_cluster, "PUT", f"{JOBS}/tf/status", job)
    assert status == 422
    assert answer["details"]["causes"][0]["field"] == "status.state.phase"
    job["status"] = {"state": {"phase": "Running"}, "runningPods": 3}
    status, stored, warnings = await send(sim_cluster, "PUT", f"{JOBS}/tf/status", job)
    assert status == 200 and stored["status"] == {"state": {"phase": "Running"}}
    assert warnings == ['299 - "unknown field \\"status.runningPods\\""']


async def test_merge_patches_are_pruned_and_strict_too(sim_cluster) -> None:
    assert (await send(sim_cluster, "POST", JOBS, JOB))[0] == 201
    merge = "application/merge-patch+json"
    status, patched, warnings = await send(
        sim_cluster,
        "PATCH",
        f"{JOBS}/tf",
        {"spec": {"minAvailable": 1, "maxRetries": 5}},
        **{"Content-Type": merge},
    )
    assert status == 200 and "maxRetries" not in patched["spec"] and warnings
    status, answer, _ = await send(
        sim_cluster,
        "PATCH",
        f"{JOBS}/tf?fieldValidation=Strict",
        {"spec": {"maxRetries": 5}},
        **{"Content-Type": merge},
    )
    assert status == 400 and 'unknown field "spec.maxRetries"' in answer["message"]


async def test_core_kinds_drop_unknown_fields(sim_cluster) -> None:
    pod: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "labels": {"a": "b"}},
        "spec": {
            "schedulerName": "none",
            "restartPolcy": "Never",
            "containers": [
                {"name": "c", "image": "x", "cmd": ["true"], "resources": {"limits": {"cpu": 1}}}
            ],
        },
    }
    status, stored, warnings = await send(sim_cluster, "POST", PODS, pod)
    assert status == 201
    assert "restartPolcy" not in stored["spec"] and "cmd" not in stored["spec"]["containers"][0]
    assert stored["spec"]["restartPolicy"] == "Always"  # the misspelt field did nothing
    # SetDefaults_Pod: a limit without a request is the request too
    assert stored["spec"]["containers"][0]["resources"] == {
        "limits": {"cpu": 1},
        "requests": {"cpu": 1},
    }
    assert len(warnings) == 2
    pod["metadata"]["name"] = "q"
    status, answer, _ = await send(sim_cluster, "POST", PODS + "?fieldValidation=Strict", pod)
    assert status == 400
    assert answer["message"] == (
        'Pod in version "v1" cannot be handled as a Pod: strict decoding error: '
        'unknown field "spec.restartPolcy", unknown field "spec.containers[0].cmd"'
    )
    cm = {"metadata": {"name": "cm"}, "data": {"k": "v"}, "extra": 1}
    status, stored, _ = await send(sim_cluster, "POST", "/api/v1/namespaces/default/configmaps", cm)
    assert status == 201 and "extra" not in stored


async def test_core_kinds_refuse_values_of_the_wrong_type(sim_cluster) -> None:
    pod: dict[str, Any] = {
        "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c", "image": "x", "ports": "80"}]},
    }
    status, answer, _ = await send(sim_cluster, "POST", PODS, pod)
    assert status == 400 and answer["reason"] == "BadRequest"
    assert "spec.containers[0].ports" in answer["message"]


async def test_podgroup_has_no_status_subresource(sim_cluster) -> None:
    path = "/apis/scheduling.volcano.sh/v1beta1/namespaces/default/podgroups"
    pg = {"metadata": {"name": "pg"}, "spec": {"minMember": 1}, "status": {"phase": "Pending"}}
    status, stored, _ = await send(sim_cluster, "POST", path, pg)
    assert status == 201 and stored["spec"]["queue"] == "default"
    assert (await send(sim_cluster, "GET", f"{path}/pg/status"))[0] == 404
    # so a status write goes to the object itself
    status, updated, _ = await send(
        sim_cluster,
        "PATCH",
        f"{path}/pg",
        {"status": {"phase": "Completed"}},
        **{"Content-Type": "application/merge-patch+json"},
    )
    assert status == 200 and updated["status"]["phase"] == "Completed"


async def test_listeners_see_each_write_as_sent_and_what_it_lost(sim_cluster) -> None:
    """`on_write`: what the wire-format tests read (tests/e2e/test_written_objects.py)."""
    seen: list[Any] = []
    sim_cluster.on_write(seen.append)
    body = with_spec(bogus=1)
    assert (await send(sim_cluster, "POST", JOBS, body))[0] == 201
    merge = {"Content-Type": "application/merge-patch+json"}
    patch = {"spec": {"maxRetries": 5}}
    assert (await send(sim_cluster, "PATCH", f"{JOBS}/tf", patch, **merge))[0] == 200
    assert (await send(sim_cluster, "GET", f"{JOBS}/tf"))[0] == 200

    assert [(w.method, w.resource, w.subresource) for w in seen] == [
        ("POST", registry.JOB, None),
        ("PATCH", registry.JOB, None),
    ]
    assert seen[0].sent["spec"]["bogus"] == 1 and "bogus" not in seen[0].stored["spec"]
    assert seen[0].warnings == ('unknown field "spec.bogus"',)
    assert seen[1].sent == patch and seen[1].warnings == ('unknown field "spec.maxRetries"',)


async def test_a_dry_run_create_is_checked_and_answered_but_not_stored(sim_cluster) -> None:
    """`dryRun=All`, as `kubectl apply --dry-run=server` sends it: the answer is the object
    as it would be stored (defaults set), the same refusals apply, and nothing changes."""
    rv = sim_cluster.store.rv
    status, job, _ = await send(sim_cluster, "POST", JOBS + "?dryRun=All", JOB)
    assert status == 201 and job["spec"]["maxRetry"] == 3
    assert sim_cluster.store.rv == rv
    status, _, _ = await send(sim_cluster, "GET", f"{JOBS}/tf")
    assert status == 404
    status, answer, _ = await send(
        sim_cluster, "POST", JOBS + "?dryRun=All&fieldValidation=Strict", with_spec(bogus=1)
    )
    assert status == 400 and "spec.bogus" in answer["message"]


async def test_a_dry_run_the_simulator_cannot_do_is_refused_not_done(sim_cluster) -> None:
    status, answer, _ = await send(sim_cluster, "POST", JOBS + "?dryRun=Some", JOB)
    assert status == 400 and '"All"' in answer["message"]
    status, _, _ = await send(sim_cluster, "POST", JOBS, JOB)
    assert status == 201
    rv = sim_cluster.store.rv
    status, answer, _ = await send(sim_cluster, "DELETE", f"{JOBS}/tf?dryRun=All")
    assert status == 400 and "create only" in answer["message"]
    assert sim_cluster.store.rv == rv
