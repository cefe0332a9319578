"""A job's claims as Volcano's `createJobIOIfNotExist` makes them: an unnamed volume gets
`<job>-pvc-<12 characters>` in the Job's spec and a claim owned by the Job; a named one
mounts the existing claim."""

from __future__ import annotations

import re
from typing import Any

from lavalog.controller.actuator.core import volumes
from lavalog.controller.actuator.core.pods import build_pod
from lavalog.events.decisions import PodRef

CLAIM = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}


def job(*volume: dict[str, Any], uid: str = "uid-1") -> dict[str, Any]:
    task = {
        "name": "worker",
        "replicas": 1,
        "template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}},
    }
    return {
        "metadata": {"name": "train", "namespace": "team-a", "uid": uid},
        "spec": {"tasks": [task], "volumes": list(volume)},
    }


def test_an_unnamed_volume_is_named_as_volcano_names_it_and_again_the_same():
    given = job(
        {"mountPath": "/data", "volumeClaim": CLAIM},
        {"mountPath": "/in", "volumeClaimName": "inputs"},
    )
    named = volumes.with_claim_names(given)
    assert named is not None
    first, second = named["spec"]["volumes"]
    assert re.fullmatch(r"train-pvc-[0-9a-z]{12}", first["volumeClaimName"])
    assert second == {"mountPath": "/in", "volumeClaimName": "inputs"}
    assert volumes.with_claim_names(given) == named  # a retry names the same claim
    assert volumes.with_claim_names(named) is None
    other = volumes.with_claim_names(job({"mountPath": "/data", "volumeClaim": CLAIM}, uid="uid-2"))
    assert (
        other is not None
        and other["spec"]["volumes"][0]["volumeClaimName"] != first["volumeClaimName"]
    )
    assert given["spec"]["volumes"][0] == {
        "mountPath": "/data",
        "volumeClaim": CLAIM,
    }  # not mutated


def test_the_claim_lavalog_named_is_created_owned_by_the_job_and_a_named_one_is_only_looked_for():
    named = volumes.with_claim_names(
        job(
            {"mountPath": "/data", "volumeClaim": CLAIM},
            {"mountPath": "/in", "volumeClaimName": "inputs"},
        )
    )
    assert named is not None
    claim_name = named["spec"]["volumes"][0]["volumeClaimName"]
    assert volumes.claims_to_create(named) == [
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {
                "name": claim_name,
                "namespace": "team-a",
                "ownerReferences": [
                    {
                        "apiVersion": "batch.volcano.sh/v1alpha1",
                        "kind": "Job",
                        "name": "train",
                        "uid": "uid-1",
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ],
            },
            "spec": CLAIM,
        }
    ]
    assert volumes.claims_to_find(named) == ["inputs"]


def test_pods_mount_both_claims():
    named = volumes.with_claim_names(
        job(
            {"mountPath": "/data", "volumeClaim": CLAIM},
            {"mountPath": "/in", "volumeClaimName": "inputs"},
        )
    )
    assert named is not None
    pod = build_pod(
        named, PodRef(name="train-worker-0", task="worker", index=0), job_version=0, podgroup="pg"
    )
    claims = [v["persistentVolumeClaim"]["claimName"] for v in pod["spec"]["volumes"]]
    assert claims == [named["spec"]["volumes"][0]["volumeClaimName"], "inputs"]
    mounts = [m["mountPath"] for m in pod["spec"]["containers"][0]["volumeMounts"]]
    assert mounts == ["/data", "/in"]
