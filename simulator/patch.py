"""The three PATCH dialects: JSON merge patch (RFC 7386), JSON patch (RFC 6902) and
strategic merge patch, which is merge patch plus merging lists of named items.

Strategic merge matters for kubectl: `kubectl apply` on a Pod sends only the changed
container fields keyed by container name, and a plain merge would drop the rest.
"""

from __future__ import annotations

import copy
from typing import Any

from lavalog.simulator.errors import ApiError, bad_request

MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
KINDS = (MERGE, JSON_PATCH, STRATEGIC)

#: Merge keys of list items in strategic merge patch (containers by name, conditions by type...).
_MERGE_KEYS = ("name", "type", "containerPort", "mountPath", "uid")


def merge_patch(target: Any, patch: Any, *, strategic: bool = False) -> Any:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if strategic and key.startswith("$"):
            continue  # directives such as $setElementOrder only reorder
        if value is None:
            result.pop(key, None)
        elif strategic and isinstance(value, list):
            result[key] = _merge_list(result.get(key), value)
        else:
            result[key] = merge_patch(result.get(key), value, strategic=strategic)
    return result


def _merge_key(items: list[Any]) -> str | None:
    if not items or not all(isinstance(i, dict) for i in items):
        return None
    return next((k for k in _MERGE_KEYS if all(k in i for i in items)), None)


def _merge_list(target: Any, patch: list[Any]) -> list[Any]:
    if not isinstance(target, list):
        return [merge_patch(None, item, strategic=True) for item in patch]
    key = _merge_key(target + patch)
    if key is None:
        return copy.deepcopy(patch)
    merged = {item[key]: item for item in target}
    for item in patch:
        if item.get("$patch") == "delete":
            merged.pop(item[key], None)
        else:
            merged[item[key]] = merge_patch(merged.get(item[key]), item, strategic=True)
    return list(merged.values())


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise bad_request(f"invalid JSON pointer {path!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _parent(doc: Any, parts: list[str]) -> Any:
    node = doc
    for part in parts[:-1]:
        node = node[int(part)] if isinstance(node, list) else node[part]
    return node


def _get(doc: Any, parts: list[str]) -> Any:
    node = doc
    for part in parts:
        node = node[int(part)] if isinstance(node, list) else node[part]
    return node


def _remove(doc: Any, parts: list[str]) -> Any:
    parent = _parent(doc, parts)
    if isinstance(parent, list):
        return parent.pop(int(parts[-1]))
    return parent.pop(parts[-1])


def _add(doc: Any, parts: list[str], value: Any) -> None:
    parent = _parent(doc, parts)
    if isinstance(parent, list):
        if parts[-1] == "-":
            parent.append(value)
        else:
            parent.insert(int(parts[-1]), value)
    else:
        parent[parts[-1]] = value


def json_patch(target: Any, ops: Any) -> Any:
    if not isinstance(ops, list):
        raise bad_request("json patch must be a JSON array of operations")
    doc = copy.deepcopy(target)
    for op in ops:
        try:
            kind, parts = op["op"], _pointer(op["path"])
            if kind == "test":
                if _get(doc, parts) != op["value"]:
                    raise ApiError(422, "Invalid", f"test operation failed at {op['path']}")
            elif kind == "remove":
                _remove(doc, parts)
            elif kind == "add":
                _add(doc, parts, copy.deepcopy(op["value"]))
            elif kind == "replace":
                _get(doc, parts)
                _remove(doc, parts)
                _add(doc, parts, copy.deepcopy(op["value"]))
            elif kind in ("move", "copy"):
                source = _pointer(op["from"])
                value = _remove(doc, source) if kind == "move" else copy.deepcopy(_get(doc, source))
                _add(doc, parts, value)
            else:
                raise bad_request(f"unknown json patch operation {kind!r}")
        except (KeyError, IndexError, ValueError, TypeError) as exc:
            raise ApiError(422, "Invalid", f"json patch {op!r} cannot be applied: {exc}") from exc
    return doc


def apply(content_type: str, target: dict[str, Any], body: Any) -> dict[str, Any]:
    """Apply a PATCH body of the given Content-Type to a copy of `target`."""
    if content_type == JSON_PATCH:
        result = json_patch(target, body)
    elif content_type in (MERGE, STRATEGIC):
        if not isinstance(body, dict):
            raise bad_request("merge patch body must be a JSON object")
        result = merge_patch(target, body, strategic=content_type == STRATEGIC)
    else:
        raise ApiError(
            415,
            "UnsupportedMediaType",
            "the body of the request was in an unknown format - "
            f"accepted media types include: {', '.join(KINDS)}",
        )
    if not isinstance(result, dict):
        raise ApiError(422, "Invalid", "patch result is not an object")
    return result
