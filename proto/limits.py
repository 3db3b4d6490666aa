"""The message sizes the RM's gRPC server and its clients agree on.

An allocate response grows with the containers it hands over: ~16,000 of them (what a large AM gets in one
answer on a 10,000-node cluster) are some 7.5 MB, beyond gRPC's default receive limit of 4 MB, which would fail
the call and lose nothing but time (the RM answers the retried call from its cache, just as large). So the RM
sends, and the ApplicationMaster client reads, responses up to ``MAX_RESPONSE``. What the RM *reads* stays
bounded by its own, smaller limit (``rm.service.limits.MAX_MESSAGE``), which guards it against huge requests.
"""

from __future__ import annotations

MAX_RESPONSE = 64 * 1024 * 1024

# channel options for a client of the RM that may get large responses (the ApplicationMaster's)
CLIENT_OPTIONS = (("grpc.max_receive_message_length", MAX_RESPONSE),)
