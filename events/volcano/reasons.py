"""The Kubernetes Events Volcano's job controller records: source, types and reasons.

Reasons are volcano-sh/apis `batch/v1alpha1` `JobEvent` values and the pod reasons of
volcano-sh/volcano `pkg/controllers/job/constant.go`; alerts and dashboards built on
Volcano's Events select on them, so lavalog records the same ones.
"""

from __future__ import annotations

#: the source Volcano's controller records its Events under
COMPONENT = "vc-controller-manager"
NORMAL = "Normal"
WARNING = "Warning"

EXECUTE_ACTION = "ExecuteAction"
COMMAND_ISSUED = "CommandIssued"
PODGROUP_PENDING = "PodGroupPending"
FAILED_CREATE = "FailedCreate"
FAILED_DELETE = "FailedDelete"
PODGROUP_ERROR = "PodGroupError"
PLUGIN_ERROR = "PluginError"
PVC_ERROR = "PVCError"
JOB_STATUS_ERROR = "JobStatusError"
#: lavalog's own: a spec Volcano's webhook would have refused before it existed
INVALID_SPEC = "InvalidSpec"
