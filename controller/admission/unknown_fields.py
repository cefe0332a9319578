"""Fields of a Job manifest that nothing reads: typos such as `maxRetrys` or `replica`.

The controller decodes a spec leniently (an unknown field is dropped, as a real API
server prunes it), so a misspelt field silently means its default. `lavalog validate`
names them. The known fields are not listed here but taken from the models that read
the manifest: the msgspec Structs of `lavalog.events.volcano` for the Job's spec, and
kubernetes-asyncio's generated models (their `attribute_map`) for the metadata and each
task's pod template. Parts that neither models (`volumes`, `networkTopology`, plugin
arguments) are not judged.
"""

from __future__ import annotations

import difflib
import functools
from collections.abc import Collection, Iterator, Mapping
from typing import Any, cast

import msgspec
import msgspec.inspect as mi

from lavalog.events.volcano.api import JobSpec, TaskSpec

#: the top of a manifest: Kubernetes' TypeMeta and ObjectMeta, then the Job's own parts
_TOP_LEVEL = ("apiVersion", "kind", "metadata", "spec", "status")
#: fields the Structs keep as raw JSON, and the Kubernetes model that describes them
_RAW_AS_KUBERNETES: dict[tuple[type[msgspec.Struct], str], str] = {
    (TaskSpec, "template"): "V1PodTemplateSpec"
}


class UnknownField(msgspec.Struct, frozen=True):
    """A field no model of the manifest knows, with the known names closest to it."""

    path: str
    close: tuple[str, ...] = ()

    def reason(self, *, ignored: bool) -> str:
        """`unknown field, ignored (did you mean maxRetry?)`; an error says no `ignored`."""
        hint = f" (did you mean {' or '.join(self.close)}?)" if self.close else ""
        return f"unknown field{', ignored' if ignored else ''}{hint}"

    def __str__(self) -> str:
        return f"{self.path}: {self.reason(ignored=True)}"


def unknown_fields(document: Mapping[str, Any]) -> list[UnknownField]:
    """Every unknown field of a Job manifest: a mapping's own, then those inside it."""
    found: list[UnknownField] = list(_unknown_keys(document, _TOP_LEVEL, ""))
    metadata = document.get("metadata")
    if isinstance(metadata, Mapping):
        found += _in_kubernetes(metadata, "V1ObjectMeta", "metadata")
    spec = document.get("spec")
    if isinstance(spec, Mapping):
        found += _in_struct(spec, JobSpec, "spec")
    return found


def _unknown_keys(
    data: Mapping[str, Any], known: Collection[str], path: str
) -> Iterator[UnknownField]:
    for key in data:
        if key not in known:
            close = tuple(difflib.get_close_matches(str(key), list(known), n=2, cutoff=0.7))
            yield UnknownField(f"{path}.{key}" if path else str(key), close)


def _in_struct(
    data: Mapping[str, Any], struct: type[msgspec.Struct], path: str
) -> list[UnknownField]:
    fields = _struct_fields(struct)
    found = list(_unknown_keys(data, fields, path))
    for key, value in data.items():
        field = fields.get(key)
        if field is None:
            continue
        where = f"{path}.{key}"
        kubernetes_model = _RAW_AS_KUBERNETES.get((struct, key))
        if kubernetes_model is not None:
            found += _in_kubernetes(value, kubernetes_model, where)
        else:
            found += _in_type(value, field.type, where)
    return found


@functools.cache
def _struct_fields(struct: type[msgspec.Struct]) -> dict[str, mi.Field]:
    """JSON name -> field of a Struct."""
    info = cast(mi.StructType, mi.type_info(struct))
    return {field.encode_name: field for field in info.fields}


def _in_type(value: Any, kind: mi.Type, path: str) -> list[UnknownField]:
    """Descend into the Structs a field holds (directly, optionally, or in a list)."""
    if isinstance(kind, mi.UnionType):
        return [f for option in kind.types for f in _in_type(value, option, path)]
    if isinstance(kind, mi.StructType) and isinstance(value, Mapping):
        return _in_struct(value, kind.cls, path)
    if isinstance(kind, mi.VarTupleType | mi.ListType) and isinstance(value, list):
        return [
            f
            for i, item in enumerate(value)
            for f in _in_type(item, kind.item_type, f"{path}[{i}]")
        ]
    return []


def _in_kubernetes(value: Any, type_name: str, path: str) -> list[UnknownField]:
    """Walk a value by a kubernetes-asyncio type name: `V1PodSpec`, `list[V1Container]`,
    `dict(str, V1Volume)`; scalars and `object` are not looked into."""
    if type_name.startswith("list[") and isinstance(value, list):
        item_type = type_name[5:-1]
        return [
            f
            for i, item in enumerate(value)
            for f in _in_kubernetes(item, item_type, f"{path}[{i}]")
        ]
    if type_name.startswith("dict(") and isinstance(value, Mapping):
        item_type = type_name[5:-1].split(", ", 1)[1]
        return [
            f
            for key, item in value.items()
            for f in _in_kubernetes(item, item_type, f"{path}[{key}]")
        ]
    fields = _kubernetes_fields(type_name)
    if not fields or not isinstance(value, Mapping):
        return []
    found = list(_unknown_keys(value, fields, path))
    for key, item in value.items():
        if key in fields:
            found += _in_kubernetes(item, fields[key], f"{path}.{key}")
    return found


@functools.cache
def _kubernetes_fields(type_name: str) -> dict[str, str]:
    """JSON name -> type name of each field of the generated model called `type_name`;
    empty for a scalar (`str`, `object`, ...)."""
    from kubernetes_asyncio.client import models  # 0.4 s: only when a manifest is checked

    model = getattr(models, type_name, None)
    if model is None:
        return {}
    attributes: dict[str, str] = model.attribute_map
    types: dict[str, str] = model.openapi_types
    return {json_name: types[attribute] for attribute, json_name in attributes.items()}
