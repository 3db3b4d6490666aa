"""YARN's container exit statuses (``ContainerExitStatus``), shared by the RM, NodeManagers and AMs."""

from __future__ import annotations

# YARN's ContainerExitStatus values.
EXIT_SUCCESS = 0
EXIT_INVALID = -1000
EXIT_ABORTED = -100
EXIT_DISKS_FAILED = -101
EXIT_PREEMPTED = -102
EXIT_KILLED_EXCEEDED_VMEM = -103
EXIT_KILLED_EXCEEDED_PMEM = -104
EXIT_KILLED_BY_APPMASTER = -105
EXIT_KILLED_BY_RESOURCEMANAGER = -106
EXIT_KILLED_AFTER_APP_COMPLETION = -107

# AM container exits that do not use up an attempt (YARN's shouldCountTowardsMaxAttemptRetry).
NOT_COUNTED_EXITS = frozenset(
    {EXIT_ABORTED, EXIT_PREEMPTED, EXIT_DISKS_FAILED, EXIT_KILLED_BY_RESOURCEMANAGER}
)
