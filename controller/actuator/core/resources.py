"""The objects a job's plugins need beside its pods: what a `PluginResourcesEnsure`
decision writes and a `PluginResourcesDelete` decision deletes.

How to write them, as Volcano does: a ConfigMap is created or replaced (hosts change
when tasks scale); a Service, NetworkPolicy or Secret is created if absent and otherwise
left alone (`KEEP_EXISTING_KINDS`): running pods hold the ssh keys they mounted, and a
Service keeps its identity. Killing the whole job deletes them all (Volcano's
`OnJobDelete`), so that the next run starts from fresh ones.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lavalog.controller.actuator.core import paths
from lavalog.controller.actuator.core.job import JobView
from lavalog.controller.actuator.core.plugins import KeyGenerator, PluginContext, build_plugins
from lavalog.events.decisions import PluginResourcesDelete, PluginResourcesEnsure
from lavalog.events.topics import split_job_key

KEEP_EXISTING_KINDS = frozenset({"Service", "NetworkPolicy", "Secret"})


def build_plugin_resources(
    job: Mapping[str, Any], decision: PluginResourcesEnsure, *, keygen: KeyGenerator | None = None
) -> list[dict[str, Any]]:
    """Manifests for the decision's plugins, with its task replicas; `keygen` makes the ssh
    key pair (required when the ssh plugin is on and the job gives no keys)."""
    view = JobView.of(job)
    replicas = {t.name: decision.task_replicas.get(t.name, t.replicas) for t in view.spec.tasks}
    plugins = build_plugins(decision.plugins, PluginContext(keygen=keygen))
    return [manifest for plugin in plugins for manifest in plugin.job_resources(view, replicas)]


def plugin_resource_paths(decision: PluginResourcesDelete) -> list[str]:
    """API paths of the objects the decision's plugins create for its job."""
    namespace, name = split_job_key(decision.key)
    return [
        paths.named(ref.api_version, ref.kind, namespace, ref.name)
        for plugin in build_plugins(decision.plugins)
        for ref in plugin.job_resource_refs(name)
    ]
