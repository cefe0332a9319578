"""Job plugins: arguments, dependencies, and what each does to pods and around them."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from lavalog.controller.actuator.core.plugins import (
    KeyPair,
    ObjectRef,
    PluginError,
    build_plugins,
)
from lavalog.controller.actuator.core.plugins.registry import BUILDERS
from lavalog.controller.actuator.core.pods import build_pod
from lavalog.controller.actuator.core.podspec import Manifest
from lavalog.controller.actuator.core.resources import KEEP_EXISTING_KINDS, build_plugin_resources
from lavalog.controller.plugins import CATALOGUE
from lavalog.events.decisions import PluginResourcesEnsure, PodRef
from tests.data import load_job


def test_every_plugin_of_the_catalogue_has_a_builder() -> None:
    assert list(BUILDERS) == list(CATALOGUE)


def test_building_plugins_with_a_bad_argument_fails() -> None:
    """A Job edited after admission (the actuator reads the Job as it is now) must not get
    pods built from half its arguments."""
    with pytest.raises(PluginError, match="flag provided but not defined: -bogus"):
        build_plugins({"svc": ["--bogus"]})


def test_unknown_plugin() -> None:
    with pytest.raises(PluginError, match="unable to find job plugin: gang"):
        build_plugins({"gang": [], "env": []})


# --- fixtures -------------------------------------------------------------------------

UID = "0b8f6e52-6c55-4d3c-8f1e-2a8d9c4e7f31"


def fake_keys() -> KeyPair:
    return KeyPair(
        "-----BEGIN RSA PRIVATE KEY-----\nfake\n-----END RSA PRIVATE KEY-----\n",
        "ssh-rsa AAAAfake\n",
    )


def ensure(job: dict[str, Any], **replicas: int) -> PluginResourcesEnsure:
    tasks = {t["name"]: t["replicas"] for t in job["spec"]["tasks"]}
    return PluginResourcesEnsure(
        id="obs-1#1", key=f"default/{job['metadata']['name']}", job_uid=UID, time=0.0, cause="obs-1",
        plugins=job["spec"]["plugins"], task_replicas={**tasks, **replicas},
    )  # fmt: skip


def resources(job: dict[str, Any], **replicas: int) -> dict[str, Manifest]:
    """The job's plugin objects by `Kind/name`."""
    found = build_plugin_resources(job, ensure(job, **replicas), keygen=fake_keys)
    return {f"{m['kind']}/{m['metadata']['name']}": m for m in found}


def pod(job: dict[str, Any], task: str, index: int) -> Manifest:
    ref = PodRef(name=f"{job['metadata']['name']}-{task}-{index}", task=task, index=index)
    return build_pod(job, ref, job_version=0, podgroup="pg")


def env_of(container: Manifest) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container.get("env", [])}


def two_task_job(plugins: dict[str, list[str]], *tasks: tuple[str, int]) -> dict[str, Any]:
    return {
        "metadata": {"name": "job", "namespace": "default", "uid": UID},
        "spec": {
            "plugins": plugins,
            "tasks": [
                {
                    "name": name,
                    "replicas": replicas,
                    "template": {
                        "spec": {
                            "initContainers": [{"name": "init", "image": "busybox"}],
                            "containers": [{"name": "main", "image": "busybox"}],
                        }
                    },
                }
                for name, replicas in tasks
            ],
        },
    }


# --- env ------------------------------------------------------------------------------


def test_env_sets_index_on_containers_and_init_containers() -> None:
    spec = pod(two_task_job({"env": []}, ("worker", 3)), "worker", 2)["spec"]
    for container in spec["containers"] + spec["initContainers"]:
        assert container["env"] == [
            {"name": "VK_TASK_INDEX", "value": "2"},
            {"name": "VC_TASK_INDEX", "value": "2"},
        ]


# --- svc ------------------------------------------------------------------------------


def test_svc_objects_for_tensorflow_job() -> None:
    objects = resources(load_job("tensorflow-dist", uid=UID))
    assert sorted(objects) == [
        "ConfigMap/tensorflow-dist-mnist-svc",
        "NetworkPolicy/tensorflow-dist-mnist",
        "Service/tensorflow-dist-mnist",
    ]
    assert objects["ConfigMap/tensorflow-dist-mnist-svc"]["data"] == {
        "ps.host": "tensorflow-dist-mnist-ps-0.tensorflow-dist-mnist",
        "VC_PS_HOSTS": "tensorflow-dist-mnist-ps-0.tensorflow-dist-mnist",
        "VC_PS_NUM": "1",
        "worker.host": "tensorflow-dist-mnist-worker-0.tensorflow-dist-mnist\n"
        "tensorflow-dist-mnist-worker-1.tensorflow-dist-mnist",
        "VC_WORKER_HOSTS": "tensorflow-dist-mnist-worker-0.tensorflow-dist-mnist,"
        "tensorflow-dist-mnist-worker-1.tensorflow-dist-mnist",
        "VC_WORKER_NUM": "2",
    }
    selector = {
        "volcano.sh/job-name": "tensorflow-dist-mnist",
        "volcano.sh/job-namespace": "default",
    }
    service = objects["Service/tensorflow-dist-mnist"]
    # headless and without ports, as Volcano's createServiceIfNotExist writes it
    assert service["spec"] == {"clusterIP": "None", "selector": selector}
    assert service["metadata"]["ownerReferences"][0]["uid"] == UID
    assert objects["NetworkPolicy/tensorflow-dist-mnist"]["spec"] == {
        "podSelector": {"matchLabels": selector},
        "ingress": [{"from": [{"podSelector": {"matchLabels": selector}}]}],
        "policyTypes": ["Ingress"],
    }


def test_svc_hosts_follow_scaled_replicas() -> None:
    data = resources(load_job("tensorflow-dist", uid=UID), worker=3)[
        "ConfigMap/tensorflow-dist-mnist-svc"
    ]["data"]
    assert data["VC_WORKER_NUM"] == "3"
    assert (
        data["worker.host"].splitlines()[-1]
        == "tensorflow-dist-mnist-worker-2.tensorflow-dist-mnist"
    )


@pytest.mark.parametrize(
    ("args", "kinds", "publish"),
    [
        ([], ["ConfigMap", "NetworkPolicy", "Service"], None),
        (["--disable-network-policy"], ["ConfigMap", "Service"], None),
        (["--publish-not-ready-addresses"], ["ConfigMap", "NetworkPolicy", "Service"], True),
    ],
)
def test_svc_flags(args: list[str], kinds: list[str], publish: bool | None) -> None:
    objects = resources(two_task_job({"svc": args}, ("worker", 2)))
    assert sorted(m["kind"] for m in objects.values()) == kinds
    assert objects["Service/job"]["spec"].get("publishNotReadyAddresses") is publish


def test_svc_inject_hosts_env_false_keeps_only_the_hosts_files() -> None:
    job = two_task_job({"svc": ["--inject-hosts-env=false"]}, ("worker", 2))
    spec = pod(job, "worker", 0)["spec"]
    for container in spec["containers"] + spec["initContainers"]:
        assert "env" not in container
        assert container["volumeMounts"] == [{"name": "job-svc", "mountPath": "/etc/volcano"}]
    assert (
        resources(job)["ConfigMap/job-svc"]["data"]["worker.host"]
        == "job-worker-0.job\njob-worker-1.job"
    )
    on = pod(two_task_job({"svc": ["--inject-hosts-env"]}, ("worker", 2)), "worker", 0)["spec"]
    assert [e["name"] for e in on["containers"][0]["env"]] == ["VC_WORKER_HOSTS", "VC_WORKER_NUM"]


@pytest.mark.parametrize(
    ("plugins", "refs"),
    [
        pytest.param({"svc": []}, [
            ObjectRef("v1", "ConfigMap", "job-svc"),
            ObjectRef("v1", "Service", "job"),
            ObjectRef("networking.k8s.io/v1", "NetworkPolicy", "job"),
        ], id="svc"),
        pytest.param({"svc": ["--disable-network-policy"]}, [
            ObjectRef("v1", "ConfigMap", "job-svc"), ObjectRef("v1", "Service", "job"),
        ], id="svc-without-network-policy"),
        pytest.param({"ssh": []}, [ObjectRef("v1", "Secret", "job-ssh")], id="ssh"),
        pytest.param({"env": [], "pytorch": [], "hcclrank": []}, [
            ObjectRef("v1", "ConfigMap", "job-svc"),
            ObjectRef("v1", "Service", "job"),
            ObjectRef("networking.k8s.io/v1", "NetworkPolicy", "job"),
        ], id="frameworks-own-nothing-but-svc"),
        pytest.param({"ray": []}, [
            ObjectRef("v1", "ConfigMap", "job-svc"),
            ObjectRef("v1", "Service", "job"),
            ObjectRef("networking.k8s.io/v1", "NetworkPolicy", "job"),
            ObjectRef("v1", "Service", "job-head-svc"),
        ], id="ray"),
    ],
)  # fmt: skip
def test_resource_refs_name_every_object_written(
    plugins: dict[str, list[str]], refs: list[ObjectRef]
) -> None:
    """What killing the whole job deletes is exactly what ensuring the resources wrote."""
    found = [r for p in build_plugins(plugins) for r in p.job_resource_refs("job")]
    assert found == refs
    job = two_task_job(plugins, ("head", 1), ("worker", 1))
    written = [
        ObjectRef(m["apiVersion"], m["kind"], m["metadata"]["name"])
        for m in build_plugin_resources(job, ensure(job), keygen=fake_keys)
    ]
    assert sorted(written) == sorted(refs)


def test_svc_task_names_with_dashes_and_fixed_hostname() -> None:
    job = two_task_job({"svc": []}, ("param-server", 2), ("worker", 2))
    job["spec"]["tasks"][1]["template"]["spec"].update(hostname="trainer", subdomain="grid")
    data = resources(job)["ConfigMap/job-svc"]["data"]
    assert data == {
        "param_server.host": "job-param-server-0.job\njob-param-server-1.job",
        "VC_PARAM_SERVER_HOSTS": "job-param-server-0.job,job-param-server-1.job",
        "VC_PARAM_SERVER_NUM": "2",
        "worker.host": "trainer.grid",
        "VC_WORKER_HOSTS": "trainer.grid",
        "VC_WORKER_NUM": "1",
    }
    spec = pod(job, "worker", 1)["spec"]
    assert (spec["hostname"], spec["subdomain"]) == ("trainer", "grid")
    assert [e["name"] for e in spec["initContainers"][0]["env"]] == [
        "VC_PARAM_SERVER_HOSTS",
        "VC_PARAM_SERVER_NUM",
        "VC_WORKER_HOSTS",
        "VC_WORKER_NUM",
    ]


# --- ssh ------------------------------------------------------------------------------


def test_ssh_secret_for_mpi_job() -> None:
    secret = resources(load_job("mpi", uid=UID))["Secret/lm-mpi-job-ssh"]
    data = {key: base64.b64decode(value).decode() for key, value in secret["data"].items()}
    assert data["id_rsa"] == fake_keys().private_key
    assert data["id_rsa.pub"] == data["authorized_keys"] == "ssh-rsa AAAAfake\n"
    assert data["config"] == (
        "StrictHostKeyChecking no\n"
        "UserKnownHostsFile /dev/null\n"
        "Host lm-mpi-job-mpimaster-0\n"
        "  HostName lm-mpi-job-mpimaster-0.lm-mpi-job\n"
        "  Port 22\n"
        "Host lm-mpi-job-mpiworker-0\n"
        "  HostName lm-mpi-job-mpiworker-0.lm-mpi-job\n"
        "  Port 22\n"
        "Host lm-mpi-job-mpiworker-1\n"
        "  HostName lm-mpi-job-mpiworker-1.lm-mpi-job\n"
        "  Port 22\n"
    )
    assert "Secret" in KEEP_EXISTING_KINDS and "ConfigMap" not in KEEP_EXISTING_KINDS


def test_ssh_port_in_config() -> None:
    job = two_task_job({"ssh": ["--ssh-port=2222"]}, ("worker", 1))
    (secret,) = resources(job).values()
    assert base64.b64decode(secret["data"]["config"]).decode() == (
        "StrictHostKeyChecking no\n"
        "UserKnownHostsFile /dev/null\n"
        "Host job-worker-0\n"
        "  HostName job-worker-0.job\n"
        "  Port 2222\n"
    )


def test_ssh_user_keys_need_no_generator() -> None:
    job = two_task_job(
        {"ssh": ["--ssh-private-key=PRIVATE", "--ssh-public-key=PUBLIC"]}, ("worker", 1)
    )
    (secret,) = build_plugin_resources(job, ensure(job))
    data = {key: base64.b64decode(value).decode() for key, value in secret["data"].items()}
    assert (data["id_rsa"], data["id_rsa.pub"], data["authorized_keys"]) == (
        "PRIVATE",
        "PUBLIC",
        "PUBLIC",
    )


def test_ssh_without_generator_or_keys() -> None:
    job = two_task_job({"ssh": []}, ("worker", 1))
    with pytest.raises(PluginError, match="key generator"):
        build_plugin_resources(job, ensure(job))


@pytest.mark.parametrize(
    ("args", "path", "mode"),
    [
        ([], "/root/.ssh", 0o600),
        (["--ssh-key-file-path=/root/.ssh"], "/root/.ssh", 0o600),
        # a non-root user must be able to read the keys: Volcano's 0644 (420)
        (["--ssh-key-file-path=/home/mpi/.ssh"], "/home/mpi/.ssh", 0o644),
    ],
)
def test_ssh_mount(args: list[str], path: str, mode: int) -> None:
    spec = pod(two_task_job({"ssh": args}, ("worker", 1)), "worker", 0)["spec"]
    assert spec["volumes"] == [
        {
            "name": "job-ssh",
            "secret": {
                "secretName": "job-ssh",
                "items": [
                    {"key": "id_rsa", "path": ".ssh/id_rsa"},
                    {"key": "id_rsa.pub", "path": ".ssh/id_rsa.pub"},
                    {"key": "authorized_keys", "path": ".ssh/authorized_keys"},
                    {"key": "config", "path": ".ssh/config"},
                ],
                "defaultMode": mode,
            },
        }
    ]
    mount = {"name": "job-ssh", "mountPath": path, "subPath": ".ssh"}
    assert spec["containers"][0]["volumeMounts"] == [mount]
    assert spec["initContainers"][0]["volumeMounts"] == [mount]


# --- tensorflow -----------------------------------------------------------------------


def tf_config(job: dict[str, Any], task: str, index: int) -> Any:
    return json.loads(env_of(pod(job, task, index)["spec"]["containers"][0])["TF_CONFIG"])


def test_tensorflow_roles_and_custom_names() -> None:
    job = two_task_job(
        {"tensorflow": ["--ps=params", "--worker=trainer", "--port=5000"]},
        ("chief", 1), ("params", 1), ("trainer", 2), ("evaluator", 1), ("logger", 1),
    )  # fmt: skip
    assert tf_config(job, "trainer", 1) == {
        "cluster": {
            "ps": ["job-params-0.job:5000"],
            "worker": ["job-trainer-0.job:5000", "job-trainer-1.job:5000"],
            "chief": ["job-chief-0.job:5000"],
            "evaluator": ["job-evaluator-0.job:5000"],
        },
        "task": {"type": "worker", "index": 1},
    }
    assert tf_config(job, "params", 0)["task"] == {"type": "ps", "index": 0}
    assert tf_config(job, "chief", 0)["task"] == {"type": "chief", "index": 0}
    assert tf_config(job, "logger", 0)["task"] == {"type": "logger", "index": 0}
    init_env = env_of(pod(job, "trainer", 0)["spec"]["initContainers"][0])
    assert "TF_CONFIG" not in init_env


def test_tensorflow_exact_json_text() -> None:
    """Go's json.Marshal output: compact, cluster roles in ps/worker/chief/evaluator order."""
    job = two_task_job({"tensorflow": []}, ("worker", 1), ("ps", 1))
    text = env_of(pod(job, "ps", 0)["spec"]["containers"][0])["TF_CONFIG"]
    assert text == (
        '{"cluster":{"ps":["job-ps-0.job:2222"],"worker":["job-worker-0.job:2222"]},'
        '"task":{"type":"ps","index":0}}'
    )


def test_tensorflow_stand_alone_job_has_no_tf_config() -> None:
    job = two_task_job({"tensorflow": []}, ("worker", 1))
    assert "TF_CONFIG" not in env_of(pod(job, "worker", 0)["spec"]["containers"][0])


# --- pytorch --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("task", "index", "rank"),
    [
        ("master", 0, "0"),
        ("worker", 0, "1"),
        ("worker", 1, "2"),
        ("worker", 2, "3"),
        ("logger", 0, None),
    ],
)
def test_pytorch_ranks(task: str, index: int, rank: str | None) -> None:
    job = two_task_job({"pytorch": []}, ("master", 1), ("worker", 3), ("logger", 1))
    container = pod(job, task, index)["spec"]["containers"][0]
    env = env_of(container)
    assert env["MASTER_ADDR"] == "job-master-0.job"
    assert env["MASTER_PORT"] == "23456"
    assert env["WORLD_SIZE"] == "4"  # master and worker replicas; the logger is no rank
    assert env.get("RANK") == rank
    assert container["ports"] == [{"name": "pytorchjob-port", "containerPort": 23456}]


def test_pytorch_sample_job() -> None:
    job = load_job("pytorch", uid=UID)
    spec = pod(job, "worker", 1)["spec"]
    env = env_of(spec["containers"][0])
    assert {k: env[k] for k in ("MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK")} == {
        "MASTER_ADDR": "pytorch-job-master-0.pytorch-job",
        "MASTER_PORT": "23456",
        "WORLD_SIZE": "3",
        "RANK": "2",
    }
    assert spec["subdomain"] == "pytorch-job"  # svc came with pytorch


def test_pytorch_keeps_declared_port_and_skips_job_without_master() -> None:
    job = two_task_job({"pytorch": ["--port=29500"]}, ("master", 1), ("worker", 1))
    job["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["ports"] = [
        {"containerPort": 29500}
    ]
    assert pod(job, "master", 0)["spec"]["containers"][0]["ports"] == [{"containerPort": 29500}]
    headless = two_task_job({"pytorch": ["--master=chief"]}, ("master", 1), ("worker", 1))
    assert "MASTER_ADDR" not in env_of(pod(headless, "worker", 0)["spec"]["containers"][0])


def test_pytorch_wait_for_master_init_container() -> None:
    args = ["--wait-master-enabled", "--wait-master-timeout=600", "--wait-master-image=alpine:3"]
    job = two_task_job({"pytorch": args}, ("master", 1), ("worker", 2))
    init = pod(job, "worker", 1)["spec"]["initContainers"]
    assert [c["name"] for c in init] == ["init", "wait-for-master"]
    assert init[1] == {
        "name": "wait-for-master",
        "image": "alpine:3",
        "command": ["sh", "-c", (
            'echo "Waiting for master node job-master-0.job:23456 to be ready..."\n'
            "TIMEOUT=600\n"
            "ELAPSED=0\n"
            "until { nc -z job-master-0.job 23456 || echo > /dev/tcp/job-master-0.job/23456; }"
            " 2>/dev/null; do\n"
            "  if [ $ELAPSED -ge $TIMEOUT ]; then\n"
            '    echo "Timeout waiting for master after ${TIMEOUT} seconds"\n'
            "    exit 1\n"
            "  fi\n"
            '  echo "Master not ready yet, retrying in 2 seconds... (elapsed: ${ELAPSED}s)"\n'
            "  sleep 2\n"
            "  ELAPSED=$((ELAPSED + 2))\n"
            "done\n"
            'echo "Master node is ready!"'
        )],
    }  # fmt: skip
    master_init = pod(job, "master", 0)["spec"]["initContainers"]
    assert [c["name"] for c in master_init] == ["init"]


def test_pytorch_wait_for_master_defaults_and_no_duplicate() -> None:
    job = two_task_job({"pytorch": ["--wait-master-enabled=true"]}, ("master", 1), ("worker", 1))
    job["spec"]["tasks"][1]["template"]["spec"]["initContainers"] = [
        {"name": "wait-for-master", "image": "mine"}
    ]
    init = pod(job, "worker", 0)["spec"]["initContainers"]
    assert [(c["name"], c["image"]) for c in init] == [("wait-for-master", "mine")]
    job["spec"]["tasks"][1]["template"]["spec"]["initContainers"] = []
    (added,) = pod(job, "worker", 0)["spec"]["initContainers"]
    assert added["image"] == "busybox:1.36.1"
    assert "TIMEOUT=300\n" in added["command"][2]
    off = two_task_job({"pytorch": []}, ("master", 1), ("worker", 1))
    assert [c["name"] for c in pod(off, "worker", 0)["spec"]["initContainers"]] == ["init"]


# --- ray ------------------------------------------------------------------------------


def ray_job(*args: str) -> dict[str, Any]:
    job = two_task_job({"ray": list(args)}, ("head", 1), ("worker", 2))
    job["spec"]["tasks"][0]["template"]["spec"]["containers"] = [
        {"name": "head", "image": "rayproject/ray", "ports": [{"containerPort": 8265}]},
        {"name": "sidecar", "image": "busybox"},
    ]
    return job


def test_ray_head_and_worker_commands() -> None:
    job = ray_job()
    head, sidecar = pod(job, "head", 0)["spec"]["containers"]
    assert head["command"] == ["sh", "-c", (
        "ray start --head --block --dashboard-host=0.0.0.0 --port=6379 --dashboard-port=8265 "
        "--ray-client-server-port=10001"
    )]  # fmt: skip
    assert head["ports"] == [
        {"containerPort": 8265},  # declared already: not added again
        {"name": "gcs", "containerPort": 6379},
        {"name": "client-server", "containerPort": 10001},
    ]
    assert "command" not in sidecar and "ports" not in sidecar
    (worker,) = pod(job, "worker", 1)["spec"]["containers"]
    assert worker["name"] == "main"  # not the --workerContainer: left alone
    assert "command" not in worker
    renamed = ray_job("--workerContainer=main", "--port=7000")
    (worker,) = pod(renamed, "worker", 1)["spec"]["containers"]
    assert worker["command"] == ["sh", "-c", "ray start --block --address=job-head-0.job:7000"]


def test_ray_head_service() -> None:
    objects = resources(ray_job("--dashboardPort=9000"))
    service = objects["Service/job-head-svc"]
    assert service["metadata"]["ownerReferences"][0]["uid"] == UID
    assert service["spec"] == {
        "selector": {
            "volcano.sh/job-name": "job",
            "volcano.sh/job-namespace": "default",
            "volcano.sh/task-spec": "head",
        },
        "ports": [
            {"name": "gcs", "port": 6379, "targetPort": "gcs", "protocol": "TCP"},
            {"name": "dashboard", "port": 9000, "targetPort": "dashboard", "protocol": "TCP"},
            {"name": "client-server", "port": 10001, "targetPort": "client-server", "protocol": "TCP"},
        ],
    }  # fmt: skip
    assert "Service/job" in objects  # svc came with ray


# --- hcclrank -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("plugins", "task", "index", "rank"),
    [
        ({"hcclrank": []}, "master", 1, "1"),
        ({"hcclrank": []}, "worker", 0, "2"),  # after the master's 2 replicas
        ({"hcclrank": []}, "worker", 2, "4"),
        ({"hcclrank": []}, "logger", 0, None),
        ({"hcclrank": ["--master=worker", "--worker=logger"]}, "logger", 0, "3"),
        # pytorch's RANK wins: it runs first
        ({"hcclrank": [], "pytorch": []}, "worker", 2, "3"),
    ],
)
def test_hcclrank_annotation(
    plugins: dict[str, list[str]], task: str, index: int, rank: str | None
) -> None:
    job = two_task_job(plugins, ("master", 2), ("worker", 3), ("logger", 1))
    assert pod(job, task, index)["metadata"]["annotations"].get("hccl/rankIndex") == rank


def test_hcclrank_keeps_an_annotation_the_template_sets() -> None:
    job = two_task_job({"hcclrank": []}, ("master", 1))
    job["spec"]["tasks"][0]["template"]["metadata"] = {"annotations": {"hccl/rankIndex": "7"}}
    assert pod(job, "master", 0)["metadata"]["annotations"]["hccl/rankIndex"] == "7"


# --- mpi ------------------------------------------------------------------------------


def test_mpi_launcher_gets_worker_hosts() -> None:
    job = load_job("mpi", uid=UID)
    master = pod(job, "mpimaster", 0)["spec"]["containers"][0]
    assert (
        env_of(master)["MPI_HOST"]
        == "lm-mpi-job-mpiworker-0.lm-mpi-job,lm-mpi-job-mpiworker-1.lm-mpi-job"
    )
    assert master["ports"] == [{"containerPort": 22, "name": "mpijob-port"}]  # already declared
    worker = pod(job, "mpiworker", 1)["spec"]
    assert "MPI_HOST" not in env_of(worker["containers"][0])
    assert (worker["hostname"], worker["subdomain"]) == ("lm-mpi-job-mpiworker-1", "lm-mpi-job")
    assert [m["mountPath"] for m in worker["containers"][0]["volumeMounts"]] == [
        "/etc/volcano",
        "/root/.ssh",
    ]


def test_mpi_job_objects() -> None:
    assert sorted(resources(load_job("mpi", uid=UID))) == [
        "ConfigMap/lm-mpi-job-svc",
        "NetworkPolicy/lm-mpi-job",
        "Secret/lm-mpi-job-ssh",
        "Service/lm-mpi-job",
    ]


def test_mpi_opens_port_on_init_containers_too() -> None:
    job = two_task_job({"mpi": ["--port=2022"]}, ("master", 1), ("worker", 2))
    spec = pod(job, "master", 0)["spec"]
    for container in (spec["initContainers"][0], spec["containers"][0]):
        assert container["ports"] == [{"name": "mpijob-port", "containerPort": 2022}]
        assert env_of(container)["MPI_HOST"] == "job-worker-0.job,job-worker-1.job"


def test_mpi_master_without_worker_task_is_left_alone() -> None:
    """Volcano returns before opening the port when the worker task is missing."""
    job = two_task_job({"mpi": ["--worker=ranks"]}, ("master", 1), ("worker", 2))
    spec = pod(job, "master", 0)["spec"]
    for container in (spec["initContainers"][0], spec["containers"][0]):
        assert "ports" not in container
        assert "MPI_HOST" not in env_of(container)
    worker = pod(job, "worker", 0)["spec"]["containers"][0]
    assert worker["ports"] == [{"name": "mpijob-port", "containerPort": 22}]


def test_mpi_master_with_empty_worker_task() -> None:
    job = two_task_job({"mpi": []}, ("master", 1), ("worker", 0))
    container = pod(job, "master", 0)["spec"]["containers"][0]
    assert env_of(container)["MPI_HOST"] == ""
    assert container["ports"] == [{"name": "mpijob-port", "containerPort": 22}]
