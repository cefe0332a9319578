"""OpenAPI v3 schemas of Kubernetes' own types, derived from kubernetes-asyncio's models.

The models carry every field's JSON name (`attribute_map`) and type (`openapi_types`),
which is what the API server's Go structs know: a core object loses any other field,
and a Volcano Job's pod template is checked against the same PodTemplateSpec. Deriving
the schemas from the models, rather than keeping hand lists, keeps them complete.

Two things the Python models flatten are restored from tables: `resource.Quantity`
(a string in the models, an int-or-string on the wire: `cpu: 1` is valid) and the
free-form objects (`managedFields[].fieldsV1`), which are not int-or-strings.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

from kubernetes_asyncio.client import Configuration, models

Schema = dict[str, Any]

#: (model, attribute) typed as `resource.Quantity` in the Go API
_QUANTITIES = frozenset(
    {
        ("V1ResourceRequirements", "limits"),
        ("V1ResourceRequirements", "requests"),
        ("V1VolumeResourceRequirements", "limits"),
        ("V1VolumeResourceRequirements", "requests"),
        ("V1PersistentVolumeClaimStatus", "capacity"),
        ("V1PersistentVolumeClaimStatus", "allocated_resources"),
        ("V1NodeStatus", "capacity"),
        ("V1NodeStatus", "allocatable"),
        ("V1PodSpec", "overhead"),
        ("V1EmptyDirVolumeSource", "size_limit"),
        ("V1ResourceFieldSelector", "divisor"),
    }
)
#: (model, attribute) typed `object` in the models that hold arbitrary JSON; every
#: other `object` of the core kinds is an IntOrString (ports, targetPort)
_FREE_FORM = frozenset(
    {("V1ManagedFieldsEntry", "fields_v1"), ("V1CustomResourceSubresources", "status")}
)
#: models that contain themselves (a CRD's schema is a tree of JSONSchemaProps): inside
#: another model they are free-form, as deep as the API server's structural check goes here
_RECURSIVE = frozenset({"V1JSONSchemaProps"})

_SCALARS: dict[str, Schema] = {
    "str": {"type": "string"},
    "int": {"type": "integer", "format": "int64"},
    "float": {"type": "number", "format": "double"},
    "bool": {"type": "boolean"},
    "datetime": {"type": "string", "format": "date-time"},
    "date": {"type": "string", "format": "date"},
}
INT_OR_STRING: Schema = {
    "anyOf": [{"type": "integer"}, {"type": "string"}],
    "x-kubernetes-int-or-string": True,
}
#: what the model setters check against when `_required` asks them
_VALIDATING = Configuration()
_VALIDATING.client_side_validation = True
_LIST = re.compile(r"^list\[(.+)\]$")
_DICT = re.compile(r"^dict\(str, (.+)\)$")


def model(name: str) -> type[Any]:
    """The kubernetes-asyncio model class named `name` (`V1Pod`, `CoreV1Event`)."""
    cls: type[Any] = getattr(models, name)
    return cls


@cache
def of(model_name: str) -> Schema:
    """The structural schema of a model: every field with its JSON name and type.

    Cached and shared: callers must not change the result (`copy.deepcopy` it first).
    """
    cls = model(model_name)
    properties: dict[str, Schema] = {}
    for attribute, type_name in cls.openapi_types.items():
        json_name = cls.attribute_map[attribute]
        properties[json_name] = _field(model_name, attribute, type_name)
    schema: Schema = {"type": "object", "properties": properties}
    required = [cls.attribute_map[a] for a in _required(cls)]
    if required:
        schema["required"] = required
    return schema


def _required(cls: type[Any]) -> list[str]:
    """The attributes a model refuses to hold as None: the generated setters raise
    ValueError for a required one while client-side validation is on. Asked of the
    setters, not read from the models' source, which an install may leave out (only
    the compiled modules)."""
    probe: Any = object.__new__(cls)  # no constructor: it would refuse the first one unset
    probe.local_vars_configuration = _VALIDATING
    required = []
    for attribute in cls.openapi_types:
        try:
            setattr(probe, attribute, None)
        except ValueError:
            required.append(attribute)
    return required


def _field(model_name: str, attribute: str, type_name: str) -> Schema:
    if (model_name, attribute) in _QUANTITIES:
        element = INT_OR_STRING
        return (
            {"type": "object", "additionalProperties": element}
            if "dict" in type_name
            else (dict(element))
        )
    if type_name == "object":
        if (model_name, attribute) in _FREE_FORM:
            return {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
        return dict(INT_OR_STRING)
    return _type(type_name)


def _type(type_name: str) -> Schema:
    if type_name in _SCALARS:
        return dict(_SCALARS[type_name])
    if found := _LIST.match(type_name):
        return {"type": "array", "items": _type(found.group(1))}
    if found := _DICT.match(type_name):
        return {"type": "object", "additionalProperties": _type(found.group(1))}
    if type_name in _RECURSIVE:
        return {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    return of(type_name)
