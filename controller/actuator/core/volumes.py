"""A job's claims, as Volcano's `createJobIOIfNotExist` makes them. Pure.

Each `spec.volumes[i]` names a PersistentVolumeClaim (`volumeClaimName`) or asks for one
(`volumeClaim`, a claim spec). A volume without a name gets `<job>-pvc-<12 characters>`
(Volcano's `GenPVCName`; the characters here are derived from the Job's uid and the
volume's index, where Volcano draws them at random, so that doing it again names the same
claim), written into the Job's spec so that the pods and `status.controlledResources`
find it; its claim is created from `volumeClaim`, owned by the Job. A named volume
mounts an existing claim.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from lavalog.controller.actuator.core.job import JobView
from lavalog.controller.actuator.core.names import random_like_suffix

Obj = dict[str, Any]


def generated_claim_name(job: Mapping[str, Any], index: int) -> str:
    metadata = job.get("metadata") or {}
    seed = f"{metadata.get('uid', '')}/volumes/{index}"
    return f"{metadata.get('name', '')}-pvc-{random_like_suffix(seed)}"


def _volumes(job: Mapping[str, Any]) -> list[Obj]:
    return list((job.get("spec") or {}).get("volumes") or ())


def with_claim_names(job: Mapping[str, Any]) -> Obj | None:
    """The Job with a claim name in every volume, or None when each has one already."""
    volumes = _volumes(job)
    if all(volume.get("volumeClaimName") for volume in volumes):
        return None
    named = copy.deepcopy(dict(job))
    for index, volume in enumerate(named["spec"]["volumes"]):
        if not volume.get("volumeClaimName"):
            volume["volumeClaimName"] = generated_claim_name(job, index)
    return named


def claims_to_create(job: Mapping[str, Any]) -> list[Obj]:
    """PersistentVolumeClaims for the volumes lavalog named, from their `volumeClaim`."""
    view = JobView.of(job)
    claims = []
    for index, volume in enumerate(_volumes(job)):
        name = volume.get("volumeClaimName")
        if volume.get("volumeClaim") is None or name != generated_claim_name(job, index):
            continue
        claims.append(
            {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": view.owned_metadata(name),
                "spec": volume["volumeClaim"],
            }
        )
    return claims


def claims_to_find(job: Mapping[str, Any]) -> list[str]:
    """Claims the user named: they must exist (Volcano waits for them)."""
    return [
        name
        for index, volume in enumerate(_volumes(job))
        if (name := volume.get("volumeClaimName")) and name != generated_claim_name(job, index)
    ]
