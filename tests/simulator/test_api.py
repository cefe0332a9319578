"""The API contract through kubernetes-asyncio: CRUD, versions, conflicts, status,
patches, selectors, pagination, deletion and garbage collection."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient
from kubernetes_asyncio.client.exceptions import ApiException

from lavalog.simulator.server import SimulatedCluster
from tests.simulator.kube import MERGE, VC, core_api, custom_api, eventually, pod, vcjob


async def test_discovery_lists_every_group_and_resource(kube_api: ApiClient) -> None:
    version = await client.VersionApi(kube_api).get_code()
    assert version.major == "1"
    groups = await client.ApisApi(kube_api).get_api_versions()
    names = {g.name for g in groups.groups}
    assert {
        "batch.volcano.sh",
        "scheduling.volcano.sh",
        "bus.volcano.sh",
        "coordination.k8s.io",
    } <= names
    core = await core_api(kube_api).get_api_resources()
    served = {r.name for r in core.resources}
    assert {
        "pods",
        "pods/status",
        "pods/eviction",
        "pods/binding",
        "nodes",
        "events",
        "secrets",
    } <= served
    pg = await custom_api(kube_api).get_api_resources("scheduling.volcano.sh", "v1beta1")
    assert {r.name for r in pg.resources} >= {"podgroups", "queues", "queues/status"}
    # Volcano's PodGroup CRD declares no status subresource
    assert "podgroups/status" not in {r.name for r in pg.resources}


async def test_create_sets_identity_and_get_returns_it(kube_api: ApiClient) -> None:
    core = core_api(kube_api)
    created = await core.create_namespaced_pod("default", pod("a"))
    assert created.metadata.uid and created.metadata.creation_timestamp
    assert created.metadata.generation == 1
    assert created.status.phase == "Pending"
    assert created.spec.restart_policy == "Always"
    got = await core.read_namespaced_pod("a", "default")
    assert got.metadata.resource_version == created.metadata.resource_version


async def test_generate_name(kube_api: ApiClient) -> None:
    core = core_api(kube_api)
    body = pod("")
    body["metadata"] = {"generateName": "gen-"}
    created = await core.create_namespaced_pod("default", body)
    assert created.metadata.name.startswith("gen-") and len(created.metadata.name) == 9


async def test_resource_versions_are_global_and_increasing(kube_api: ApiClient) -> None:
    core = core_api(kube_api)
    a = await core.create_namespaced_config_map("default", {"metadata": {"name": "a"}})
    b = await core.create_namespaced_secret("default", {"metadata": {"name": "b"}})
    assert int(b.metadata.resource_version) == int(a.metadata.resource_version) + 1


@pytest.mark.parametrize(
    ("code", "reason", "call"),
    [
        pytest.param(409, "AlreadyExists", "create_twice", id="already-exists"),
        pytest.param(404, "NotFound", "read_missing", id="not-found"),
        pytest.param(404, "NotFound", "missing_namespace", id="namespace-missing"),
        pytest.param(422, "Invalid", "bad_name", id="invalid-name"),
    ],
)
async def test_errors_are_status_objects(
    kube_api: ApiClient, code: int, reason: str, call: str
) -> None:
    core = core_api(kube_api)
    await core.create_namespaced_pod("default", pod("x"))
    calls = {
        "create_twice": lambda: core.create_namespaced_pod("default", pod("x")),
        "read_missing": lambda: core.read_namespaced_pod("nope", "default"),
        "missing_namespace": lambda: core.create_namespaced_pod("nowhere", pod("y")),
        "bad_name": lambda: core.create_namespaced_pod("default", pod("Bad_Name")),
    }
    with pytest.raises(ApiException) as info:
        await calls[call]()
    assert info.value.status == code
    status = json.loads(info.value.body or b"{}")
    assert status["kind"] == "Status" and status["reason"] == reason and status["code"] == code


@pytest.mark.parametrize(
    ("name", "message"),
    [
        pytest.param(
            "a..b",
            'Pod "a..b" is invalid: metadata.name: Invalid value: "a..b": a lowercase RFC 1123 '
            "subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
            "start and end with an alphanumeric character (e.g. 'example.com', regex used for "
            r"validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
            id="empty-part",
        ),
        pytest.param(
            "x" * 254,
            f'Pod "{"x" * 254}" is invalid: metadata.name: Invalid value: "{"x" * 254}": must be '
            "no more than 253 characters",
            id="too-long",
        ),
    ],
)
async def test_an_invalid_name_is_refused_as_the_api_server_words_it(
    kube_api: ApiClient, name: str, message: str
) -> None:
    with pytest.raises(ApiException) as info:
        await core_api(kube_api).create_namespaced_pod("default", pod(name))
    assert json.loads(info.value.body or b"{}")["message"] == message


async def test_stale_put_is_a_conflict(kube_api: ApiClient) -> None:
    core = core_api(kube_api)
    first = await core.create_namespaced_config_map(
        "default", {"metadata": {"name": "cm"}, "data": {"k": "1"}}
    )
    first.data = {"k": "2"}
    await core.replace_namespaced_config_map("cm", "default", first)
    first.data = {"k": "3"}
    with pytest.raises(ApiException) as info:
        await core.replace_namespaced_config_map("cm", "default", first)
    assert info.value.status == 409 and "Conflict" in str(info.value.reason) + str(info.value.body)


async def test_custom_resource_update_needs_resource_version(kube_api: ApiClient) -> None:
    custom = custom_api(kube_api)
    job = await custom.create_namespaced_custom_object(*VC, "default", "jobs", vcjob("j"))
    del job["metadata"]["resourceVersion"]
    with pytest.raises(ApiException) as info:
        await custom.replace_namespaced_custom_object(*VC, "default", "jobs", "j", job)
    assert info.value.status == 422


async def test_generation_counts_spec_changes_only(kube_api: ApiClient) -> None:
    custom = custom_api(kube_api)
    await custom.create_namespaced_custom_object(*VC, "default", "jobs", vcjob("j"))
    labelled = await custom.patch_namespaced_custom_object(
        *VC, "default", "jobs", "j", {"metadata": {"labels": {"a": "b"}}}, _content_type=MERGE
    )
    assert labelled["metadata"]["generation"] == 1
    status = await custom.patch_namespaced_custom_object_status(
        *VC,
        "default",
        "jobs",
        "j",
        {"status": {"state": {"phase": "Running"}}},
        _content_type=MERGE,
    )
    assert status["metadata"]["generation"] == 1
    scaled = await custom.patch_namespaced_custom_object(
        *VC, "default", "jobs", "j", {"spec": {"minAvailable": 2}}, _content_type=MERGE
    )
    assert scaled["metadata"]["generation"] == 2
    assert scaled["status"]["state"]["phase"] == "Running"


async def test_status_and_spec_writes_are_separate(kube_api: ApiClient) -> None:
    custom = custom_api(kube_api)
    created = await custom.create_namespaced_custom_object(
        *VC, "default", "jobs", {**vcjob("j"), "status": {"state": {"phase": "Ignored"}}}
    )
    assert "status" not in created  # status is not settable on create
    created["spec"]["minAvailable"] = 5
    created["status"] = {"state": {"phase": "Running"}}
    after_status = await custom.replace_namespaced_custom_object_status(
        *VC, "default", "jobs", "j", created
    )
    assert after_status["spec"]["minAvailable"] == 1
    assert after_status["status"]["state"]["phase"] == "Running"
    after_status["spec"]["minAvailable"] = 3
    after_status["status"] = {"state": {"phase": "Failed"}}
    after_spec = await custom.replace_namespaced_custom_object(
        *VC, "default", "jobs", "j", after_status
    )
    assert after_spec["spec"]["minAvailable"] == 3
    assert after_spec["status"]["state"]["phase"] == "Running"


async def test_noop_update_keeps_resource_version(kube_api: ApiClient) -> None:
    core = core_api(kube_api)
    cm = await core.create_namespaced_config_map(
        "default", {"metadata": {"name": "cm"}, "data": {"a": "1"}}
    )
    again = await core.patch_namespaced_config_map("cm", "default", {"data": {"a": "1"}})
    assert again.metadata.resource_version == cm.metadata.resource_version


async def test_patch_dialects(kube_api: ApiClient) -> None:
    core = core_api(kube_api)
    await core.create_namespaced_pod(
        "default",
        pod(
            "p",
            containers=[
                {"name": "a", "image": "1", "command": ["sleep", "9"]},
                {"name": "b", "image": "1"},
            ],
        ),
    )
    # strategic merge: containers merge by name, keeping the unpatched fields
    patched = await core.patch_namespaced_pod(
        "p",
        "default",
        {
            "spec": {
                "$setElementOrder/containers": [{"name": "a"}, {"name": "b"}],
                "containers": [{"name": "a", "image": "2"}],
            }
        },
    )
    a = patched.spec.containers[0]
    assert (a.image, a.command, len(patched.spec.containers)) == ("2", ["sleep", "9"], 2)
    # JSON patch
    patched = await core.patch_namespaced_pod(
        "p",
        "default",
        [
            {"op": "add", "path": "/metadata/labels", "value": {"x": "y"}},
            {"op": "test", "path": "/spec/containers/1/name", "value": "b"},
        ],
    )
    assert patched.metadata.labels == {"x": "y"}
    # merge patch: null deletes
    patched = await core.patch_namespaced_pod(
        "p", "default", {"metadata": {"labels": {"x": None}}}, _content_type=MERGE
    )
    assert not patched.metadata.labels


async def test_strategic_patch_on_custom_resource_is_unsupported(kube_api: ApiClient) -> None:
    custom = custom_api(kube_api)
    await custom.create_namespaced_custom_object(*VC, "default", "jobs", vcjob("j"))
    with pytest.raises(ApiException) as info:
        await custom.patch_namespaced_custom_object(
            *VC,
            "default",
            "jobs",
            "j",
            {"spec": {}},
            _content_type="application/strategic-merge-patch+json",
        )
    assert info.value.status == 415


async def test_patch_with_stale_resource_version_conflicts(kube_api: ApiClient) -> None:
    core = core_api(kube_api)
    cm = await core.create_namespaced_config_map("default", {"metadata": {"name": "cm"}})
    await core.patch_namespaced_config_map("cm", "default", {"data": {"a": "1"}})
    with pytest.raises(ApiException) as info:
        await core.patch_namespaced_config_map(
            "cm",
            "default",
            {"metadata": {"resourceVersion": cm.metadata.resource_version}, "data": {"a": "2"}},
        )
    assert info.value.status == 409


@pytest.mark.parametrize(
    ("labels", "fields", "expected"),
    [
        pytest.param("app=web", None, {"w1", "w2"}, id="equality"),
        pytest.param("app==web,tier!=front", None, {"w2"}, id="double-equals-and-not"),
        pytest.param("app in (web,db)", None, {"w1", "w2", "d1"}, id="in"),
        pytest.param("app notin (web)", None, {"d1", "bare"}, id="notin-includes-missing"),
        pytest.param("tier", None, {"w1", "d1"}, id="exists"),
        pytest.param("!tier", None, {"w2", "bare"}, id="not-exists"),
        pytest.param(None, "metadata.name=d1", {"d1"}, id="field-name"),
        pytest.param("app=web", "metadata.name!=w1", {"w2"}, id="label-and-field"),
        pytest.param(None, "spec.nodeName=", {"w1", "w2", "d1", "bare"}, id="unscheduled"),
        pytest.param(None, "status.phase=Pending", {"w1", "w2", "d1", "bare"}, id="phase"),
    ],
)
async def test_selectors(
    kube_api: ApiClient, labels: str | None, fields: str | None, expected: set[str]
) -> None:
    core = core_api(kube_api)
    for name, lab in [
        ("w1", {"app": "web", "tier": "front"}),
        ("w2", {"app": "web"}),
        ("d1", {"app": "db", "tier": "back"}),
        ("bare", {}),
    ]:
        await core.create_namespaced_pod("default", pod(name, lab))
    kwargs = {
        k: v for k, v in (("label_selector", labels), ("field_selector", fields)) if v is not None
    }
    found = await core.list_namespaced_pod("default", **kwargs)
    assert {p.metadata.name for p in found.items} == expected


async def test_unsupported_field_selector_is_rejected(kube_api: ApiClient) -> None:
    with pytest.raises(ApiException) as info:
        await core_api(kube_api).list_namespaced_pod("default", field_selector="spec.hostname=x")
    assert info.value.status == 400


async def test_list_across_namespaces_and_cluster_scoped(kube_api: ApiClient) -> None:
    core = core_api(kube_api)
    await core.create_namespace({"metadata": {"name": "other"}})
    await core.create_namespaced_pod("default", pod("a"))
    await core.create_namespaced_pod("other", pod("b"))
    every = await core.list_pod_for_all_namespaces()
    assert [(p.metadata.namespace, p.metadata.name) for p in every.items] == [
        ("default", "a"),
        ("other", "b"),
    ]
    assert [p.metadata.name for p in (await core.list_namespaced_pod("other")).items] == ["b"]
    nodes = await core.list_node()
    assert [n.metadata.name for n in nodes.items] == ["node-1", "node-2"]
    assert nodes.items[0].status.capacity["nvidia.com/gpu"] == "8"


async def test_pagination(kube_api: ApiClient) -> None:
    core = core_api(kube_api)
    for i in range(25):
        await core.create_namespaced_config_map(
            "default", {"metadata": {"name": f"cm-{i:02d}", "labels": {"n": str(i % 2)}}}
        )
    names: list[str] = []
    token = None
    pages = 0
    while True:
        page = await core.list_namespaced_config_map(
            "default", limit=10, _continue=token, label_selector="n=0"
        )
        names += [c.metadata.name for c in page.items]
        pages += 1
        token = page.metadata._continue
        if not token:
            break
    assert names == [f"cm-{i:02d}" for i in range(0, 25, 2)] and pages == 2


async def test_delete_of_bound_pod_is_graceful_and_of_pending_pod_immediate(
    kube_api: ApiClient,
) -> None:
    core = core_api(kube_api)
    await core.create_namespaced_pod("default", pod("pending"))
    gone = await core.delete_namespaced_pod("pending", "default")
    assert gone.metadata.deletion_timestamp
    with pytest.raises(ApiException):
        await core.read_namespaced_pod("pending", "default")


async def test_finalizers_hold_deletion(kube_api: ApiClient) -> None:
    core = core_api(kube_api)
    await core.create_namespaced_config_map(
        "default", {"metadata": {"name": "cm", "finalizers": ["x/y"]}}
    )
    await core.delete_namespaced_config_map("cm", "default")
    still = await core.read_namespaced_config_map("cm", "default")
    assert still.metadata.deletion_timestamp and still.metadata.finalizers == ["x/y"]
    with pytest.raises(ApiException) as info:
        await core.patch_namespaced_config_map(
            "cm", "default", {"metadata": {"finalizers": ["x/y", "z"]}}
        )
    assert info.value.status == 422
    await core.patch_namespaced_config_map("cm", "default", {"metadata": {"finalizers": None}})
    with pytest.raises(ApiException) as info:
        await core.read_namespaced_config_map("cm", "default")
    assert info.value.status == 404


def owned_by(job: dict[str, Any]) -> list[dict[str, Any]]:
    meta = job["metadata"]
    return [
        {
            "apiVersion": "batch.volcano.sh/v1alpha1",
            "kind": "Job",
            "name": meta["name"],
            "uid": meta["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]


async def make_job_family(kube_api: ApiClient) -> dict[str, Any]:
    core = core_api(kube_api)
    custom = custom_api(kube_api)
    job = await custom.create_namespaced_custom_object(*VC, "default", "jobs", vcjob("tf"))
    refs = owned_by(job)
    for i in range(2):
        await core.create_namespaced_pod(
            "default",
            {
                **pod(f"tf-worker-{i}"),
                "metadata": {"name": f"tf-worker-{i}", "ownerReferences": refs},
            },
        )
    await core.create_namespaced_service(
        "default",
        {"metadata": {"name": "tf", "ownerReferences": refs}, "spec": {"clusterIP": "None"}},
    )
    await core.create_namespaced_config_map(
        "default", {"metadata": {"name": "tf-svc", "ownerReferences": refs}}
    )
    await core.create_namespaced_secret(
        "default", {"metadata": {"name": "tf-ssh", "ownerReferences": refs}}
    )
    await custom.create_namespaced_custom_object(
        "scheduling.volcano.sh",
        "v1beta1",
        "default",
        "podgroups",
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": "tf", "ownerReferences": refs},
            "spec": {"minMember": 2},
        },
    )
    return dict(job)


async def family_size(kube_api: ApiClient) -> int:
    core = core_api(kube_api)
    custom = custom_api(kube_api)
    pods = await core.list_namespaced_pod("default")
    services = await core.list_namespaced_service("default")
    cms = await core.list_namespaced_config_map("default")
    secrets = await core.list_namespaced_secret("default")
    pgs = await custom.list_namespaced_custom_object(
        "scheduling.volcano.sh", "v1beta1", "default", "podgroups"
    )
    return (
        len(pods.items)
        + len(services.items)
        + len(cms.items)
        + len(secrets.items)
        + len(pgs["items"])
    )


async def test_deleting_a_job_collects_its_dependents(kube_api: ApiClient) -> None:
    await make_job_family(kube_api)
    assert await family_size(kube_api) == 6
    await custom_api(kube_api).delete_namespaced_custom_object(*VC, "default", "jobs", "tf")

    async def collected() -> bool:
        return await family_size(kube_api) == 0

    await eventually(collected)


async def test_an_object_made_for_a_deleted_owner_is_collected(kube_api: ApiClient) -> None:
    """A controller acting on a stale view creates a pod for a Job already deleted: the
    collector finds its only owner gone and deletes it (`attemptToDeleteItem`); a pod
    that keeps another owner only loses the reference to the gone one."""
    core = core_api(kube_api)
    custom = custom_api(kube_api)
    gone = await custom.create_namespaced_custom_object(*VC, "default", "jobs", vcjob("gone"))
    kept = await custom.create_namespaced_custom_object(*VC, "default", "jobs", vcjob("kept"))
    await custom.delete_namespaced_custom_object(*VC, "default", "jobs", "gone")
    for name, refs in (("late", owned_by(gone)), ("shared", owned_by(gone) + owned_by(kept))):
        await core.create_namespaced_pod(
            "default", {**pod(name), "metadata": {"name": name, "ownerReferences": refs}}
        )

    async def collected() -> bool:
        names = [p.metadata.name for p in (await core.list_namespaced_pod("default")).items]
        return names == ["shared"]

    await eventually(collected)
    shared = await core.read_namespaced_pod("shared", "default")
    assert [ref.uid for ref in shared.metadata.owner_references] == [kept["metadata"]["uid"]]


async def test_orphan_propagation_keeps_dependents(kube_api: ApiClient) -> None:
    await make_job_family(kube_api)
    await custom_api(kube_api).delete_namespaced_custom_object(
        *VC, "default", "jobs", "tf", propagation_policy="Orphan"
    )
    await asyncio.sleep(0.1)
    assert await family_size(kube_api) == 6
    left = await core_api(kube_api).read_namespaced_pod("tf-worker-0", "default")
    assert not left.metadata.owner_references


async def test_foreground_deletion_waits_for_dependents(kube_api: ApiClient) -> None:
    custom = custom_api(kube_api)
    await make_job_family(kube_api)
    held = await custom.delete_namespaced_custom_object(
        *VC, "default", "jobs", "tf", propagation_policy="Foreground"
    )
    assert "foregroundDeletion" in held["metadata"]["finalizers"]

    async def job_gone() -> bool:
        try:
            await custom.get_namespaced_custom_object(*VC, "default", "jobs", "tf")
        except ApiException as exc:
            return exc.status == 404
        return False

    await eventually(job_gone)
    assert await family_size(kube_api) == 0


async def test_namespace_deletion_empties_it(kube_api: ApiClient) -> None:
    core = core_api(kube_api)
    await core.create_namespace({"metadata": {"name": "doomed"}})
    await core.create_namespaced_config_map("doomed", {"metadata": {"name": "cm"}})
    await core.delete_namespace("doomed")

    async def gone() -> bool:
        return "doomed" not in {n.metadata.name for n in (await core.list_namespace()).items}

    await eventually(gone)


async def test_delete_collection(kube_api: ApiClient) -> None:
    core = core_api(kube_api)
    for i in range(3):
        await core.create_namespaced_config_map(
            "default", {"metadata": {"name": f"c{i}", "labels": {"k": "v" if i else "w"}}}
        )
    await core.delete_collection_namespaced_config_map("default", label_selector="k=v")
    assert [c.metadata.name for c in (await core.list_namespaced_config_map("default")).items] == [
        "c0"
    ]


async def test_leases_and_commands(kube_api: ApiClient) -> None:
    coord: Any = client.CoordinationV1Api(kube_api)
    lease = await coord.create_namespaced_lease(
        "default",
        {
            "metadata": {"name": "lavalog"},
            "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15},
        },
    )
    lease.spec.holder_identity = "b"
    renewed = await coord.replace_namespaced_lease("lavalog", "default", lease)
    assert renewed.spec.holder_identity == "b"
    custom = custom_api(kube_api)
    command = await custom.create_namespaced_custom_object(
        "bus.volcano.sh",
        "v1alpha1",
        "default",
        "commands",
        {
            "apiVersion": "bus.volcano.sh/v1alpha1",
            "kind": "Command",
            "metadata": {"generateName": "tf-suspend-"},
            "action": "AbortJob",
            "target": {
                "apiVersion": "batch.volcano.sh/v1alpha1",
                "kind": "Job",
                "name": "tf",
                "uid": "0b6a9c1e-1111-4c1e-9b1e-000000000001",
            },
        },
    )
    assert command["action"] == "AbortJob"
    events = core_api(kube_api)
    await events.create_namespaced_event(
        "default",
        {
            "metadata": {"name": "e1"},
            "involvedObject": {"kind": "Pod", "name": "p"},
            "reason": "Started",
        },
    )
    found = await events.list_namespaced_event("default", field_selector="involvedObject.name=p")
    assert [e.reason for e in found.items] == ["Started"]


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("source=kubelet", ["from-kubelet"]),
        ("source=lavalog", ["reported"]),  # no source: its reporting controller
        ("reportingComponent=lavalog", ["reported"]),
        ("involvedObject.apiVersion=batch.volcano.sh/v1alpha1", ["reported"]),
        ("involvedObject.fieldPath=spec.containers{main}", ["from-kubelet"]),
        ("involvedObject.resourceVersion=7", ["from-kubelet"]),
        ("source!=kubelet", ["reported"]),
    ],
)
async def test_events_are_selected_by_every_field_kube_apiserver_offers(
    kube_api: ApiClient, selector: str, expected: list[str]
) -> None:
    """As kube-apiserver's Event `ToSelectableFields`: `source` is the source's component,
    else the reporting controller (an events.k8s.io writer leaves `source` empty)."""
    events = core_api(kube_api)
    written = [
        {
            "metadata": {"name": "from-kubelet"},
            "involvedObject": {
                "kind": "Pod",
                "name": "p",
                "apiVersion": "v1",
                "fieldPath": "spec.containers{main}",
                "resourceVersion": "7",
            },
            "source": {"component": "kubelet", "host": "node-1"},
            "reason": "Started",
        },
        {
            "metadata": {"name": "reported"},
            "involvedObject": {
                "kind": "Job",
                "name": "j",
                "apiVersion": "batch.volcano.sh/v1alpha1",
            },
            "reportingComponent": "lavalog",
            "reportingInstance": "lavalog-0",
            "reason": "PodGroupPending",
        },
    ]
    for event in written:
        await events.create_namespaced_event("default", event)
    found = await events.list_namespaced_event("default", field_selector=selector)
    assert sorted(e.metadata.name for e in found.items) == expected


async def test_cluster_fixture_shape(sim_cluster: SimulatedCluster) -> None:
    assert sim_cluster.url.startswith("http://127.0.0.1:")
    assert "server: " + sim_cluster.url in sim_cluster.kubeconfig_path.read_text()
