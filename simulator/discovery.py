"""Discovery documents (/version, /api, /apis, /api/v1, /apis/GROUP[/VERSION]).

kubectl and the kubernetes clients resolve kinds, plurals and short names from these;
they are derived from the registry so they can never disagree with what is served.
"""

from __future__ import annotations

from typing import Any

from lavalog.simulator import registry

Doc = dict[str, Any]

VERSION: Doc = {
    "major": "1",
    "minor": "30",
    "gitVersion": "v1.30.0-lavalog-sim",
    "gitCommit": "0000000000000000000000000000000000000000",
    "gitTreeState": "clean",
    "buildDate": "2024-01-01T00:00:00Z",
    "goVersion": "go1.22.0",
    "compiler": "gc",
    "platform": "linux/amd64",
}

_SUBRESOURCES: dict[str, tuple[str, str, str, list[str]]] = {
    # subresource -> (group, version, kind, verbs)
    "status": ("", "", "", ["get", "patch", "update"]),
    "eviction": ("policy", "v1", "Eviction", ["create"]),
    "binding": ("", "", "Binding", ["create"]),
    "log": ("", "", "Pod", ["get"]),
}


def core_versions(server_address: str) -> Doc:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [
            {"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}
        ],
    }


def _group(name: str, versions: list[str]) -> Doc:
    entries = [{"groupVersion": f"{name}/{v}", "version": v} for v in versions]
    return {"name": name, "versions": entries, "preferredVersion": entries[0]}


def groups() -> Doc:
    found = [_group(name, vs) for name, vs in registry.group_versions().items() if name]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": found}


def group(name: str) -> Doc | None:
    versions = registry.group_versions().get(name)
    if not name or versions is None:
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group(name, versions)}


def resources(group_name: str, version: str) -> Doc | None:
    served = list(registry.in_group_version(group_name, version))
    if not served:
        return None
    out: list[Doc] = []
    for r in served:
        out.append(
            {
                "name": r.plural,
                "singularName": r.kind.lower(),
                "namespaced": r.namespaced,
                "kind": r.kind,
                "verbs": r.verbs,
                "shortNames": list(r.short_names),
                "categories": ["all"] if r.custom or r.plural in ("pods", "services") else [],
            }
        )
        for sub in sorted(r.subresources):
            sub_group, sub_version, kind, verbs = _SUBRESOURCES[sub]
            entry: Doc = {
                "name": f"{r.plural}/{sub}",
                "singularName": "",
                "namespaced": r.namespaced,
                "kind": kind or r.kind,
                "verbs": verbs,
            }
            if sub_group:
                entry["group"], entry["version"] = sub_group, sub_version
            out.append(entry)
    gv = f"{group_name}/{version}" if group_name else version
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": out}
