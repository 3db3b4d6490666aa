"""Workload readers: every trace format becomes a list of native ``am.jobspec.Job``s."""
