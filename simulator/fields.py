"""Field validation of written objects: what the API server keeps, fills in and refuses.

Every create, update and patch (from a client or from the in-process scheduler and
kubelet) passes `admit` before it is stored. A custom resource is checked by its
CRD's structural schema: unknown fields pruned, `default`s filled in, invalid values
a 422 Invalid naming each field. A core kind is decoded as the Go type would decode
it: unknown fields dropped, a value of the wrong type a 400 BadRequest.

`fieldValidation` chooses what an unknown field costs: `Strict` a 400 BadRequest
("strict decoding error: unknown field ..."), `Warn` (the API server's default) a
`Warning` header per field, `Ignore` nothing.
"""

from __future__ import annotations

from typing import Any

from lavalog.apimachinery import crds, kube_schema, schema
from lavalog.simulator.errors import ApiError, bad_request
from lavalog.simulator.registry import ResourceType

STRICT, WARN, IGNORE = "Strict", "Warn", "Ignore"
#: where `admit` puts the Warning texts of a request
Warnings = list[str]
DIRECTIVES = (STRICT, WARN, IGNORE)


def directive(value: str | None) -> str:
    """The `fieldValidation` query parameter; unset means Warn, as on a real server."""
    if value in (None, ""):
        return WARN
    if value not in DIRECTIVES:
        raise bad_request(f"fieldValidation must be one of {', '.join(DIRECTIVES)}, not {value!r}")
    return value


def schema_of(resource: ResourceType) -> schema.Schema:
    """The structural schema `resource` is held to (shared: do not change it)."""
    if not resource.custom:
        return kube_schema.of(resource.schema_source)
    return crds.object_schema(resource.schema_source)


def admit(
    resource: ResourceType,
    obj: dict[str, Any],
    validation: str,
    warnings: list[str] | None,
    *,
    stored: dict[str, Any] | None = None,
) -> None:
    """Prune, default and check `obj` in place; raise the API server's answer if refused.
    `stored`: the object an update replaces (what `obj` shares with it is not walked
    again: `schema.apply`)."""
    findings = schema.apply(schema_of(resource), obj, defaults=resource.custom, stored=stored)
    if findings.unknown and validation == STRICT:
        unknown = ", ".join(f'unknown field "{field.path}"' for field in findings.unknown)
        raise bad_request(f"{_cannot(resource)}: strict decoding error: {unknown}")
    if findings.invalid and not resource.custom:
        first = findings.invalid[0]
        if first.reason == "FieldValueTypeInvalid":
            raise bad_request(
                f"{_cannot(resource)}: json: cannot decode {first.field}: {first.detail}"
            )
    if findings.invalid:
        raise _invalid(resource, obj, findings.invalid)
    if warnings is not None and validation == WARN:
        warnings.extend(f'unknown field "{field.path}"' for field in findings.unknown)


def _cannot(resource: ResourceType) -> str:
    """The start of a decoding error's message, as the API server's codec words it."""
    return f'{resource.kind} in version "{resource.version}" cannot be handled as a {resource.kind}'


def _invalid(resource: ResourceType, obj: dict[str, Any], causes: list[schema.Cause]) -> ApiError:
    name = str((obj.get("metadata") or {}).get("name") or "")
    kind = f"{resource.kind}.{resource.group}" if resource.group else resource.kind
    listed = [c.message for c in causes]
    text = listed[0] if len(listed) == 1 else "[" + ", ".join(listed) + "]"
    details: dict[str, Any] = {
        "name": name,
        "kind": resource.kind,
        "causes": [{"reason": c.reason, "message": c.detail, "field": c.field} for c in causes],
    }
    if resource.group:
        details["group"] = resource.group
    return ApiError(422, "Invalid", f'{kind} "{name}" is invalid: {text}', details=details)
