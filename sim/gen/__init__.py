"""Workload generators writing the native format."""
