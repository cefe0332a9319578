"""Label and annotation keys Volcano puts on a job's pods.

Schedulers, Services, monitoring and users select pods by them, so they are Volcano's.
"""

from __future__ import annotations

TASK_SPEC = "volcano.sh/task-spec"
TASK_INDEX = "volcano.sh/task-index"
JOB_NAME = "volcano.sh/job-name"
JOB_NAMESPACE = "volcano.sh/job-namespace"
QUEUE_NAME = "volcano.sh/queue-name"
JOB_VERSION = "volcano.sh/job-version"
JOB_RETRY_COUNT = "volcano.sh/job-retry-count"
#: pods from the same task template share it: "<job>-<task>" (Volcano's `PodTemplateKey`)
TEMPLATE_UID = "volcano.sh/template-uid"
#: the PodGroup a pod belongs to, for the gang scheduler
GROUP_NAME = "scheduling.k8s.io/group-name"
NUMA_POLICY = "volcano.sh/numa-topology-policy"
#: the partition (`partitionPolicy`) a pod belongs to; PodGroup sub-groups match on it
PARTITION_ID = "volcano.sh/partition-id"

PREEMPTABLE = "volcano.sh/preemptable"
COOLDOWN_TIME = "volcano.sh/cooldown-time"
REVOCABLE_ZONE = "volcano.sh/revocable-zone"
JDB_MIN_AVAILABLE = "volcano.sh/jdb-min-available"
JDB_MAX_UNAVAILABLE = "volcano.sh/jdb-max-unavailable"

#: the task name used when a task has none
DEFAULT_TASK = "default"
