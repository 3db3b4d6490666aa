"""Generated modules for the Hadoop IPC wire subset (``python -m proto.generate``)."""
