"""The CustomResourceDefinitions the simulator serves, read from lavalog's own manifests.

The files are `deploy/crds/*.yaml` of the source tree; a wheel carries them as
`simulator/crds/` (hatch `force-include`), so an installed simulator reads the same
definitions a real cluster is given.
"""

from __future__ import annotations

import copy
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from lavalog.apimachinery import kube_schema
from lavalog.apimachinery.crdgen import SOURCE_DIR

_PACKAGED = Path(__file__).resolve().parent / "crds"


def directory() -> Path:
    """Where the CRD files are: inside the installed package, else the source tree."""
    return _PACKAGED if _PACKAGED.is_dir() else SOURCE_DIR


@cache
def definitions() -> dict[str, dict[str, Any]]:
    """CRD name (`jobs.batch.volcano.sh`) -> the CustomResourceDefinition."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    found: dict[str, dict[str, Any]] = {}
    for path in sorted(directory().glob("*.yaml")):
        crd = yaml.load(path.read_text(), Loader=loader)
        found[crd["metadata"]["name"]] = crd
    return found


def schema_of(name: str) -> dict[str, Any]:
    """The openAPIV3Schema of the (single) served version of CRD `name`."""
    version = definitions()[name]["spec"]["versions"][0]
    schema: dict[str, Any] = version["schema"]["openAPIV3Schema"]
    return schema


@cache
def object_schema(name: str) -> dict[str, Any]:
    """What an object of CRD `name` is held to: its schema, with ObjectMeta's fields for
    `metadata`, which a CRD declares as `{type: object}` and the API server checks as
    ObjectMeta (shared: do not change it)."""
    found = copy.deepcopy(schema_of(name))
    found["properties"]["metadata"] = kube_schema.of("V1ObjectMeta")
    return found
