"""The RM's audit log, in the shape of YARN's RMAuditLogger: one line per write through any door, allowed or
denied, on the ``shepherd.rm.audit`` logger (route it to its own file with the logging configuration).

    USER=alice	IP=127.0.0.1	OPERATION=Submit Application Request	TARGET=ClientRMService	RESULT=SUCCESS	APPID=...
    USER=dr.who	IP=127.0.0.1	OPERATION=Kill Application Request	TARGET=RMWebService	RESULT=FAILURE	DESCRIPTION=...

Values are cut to a bounded length and stripped of tabs and line breaks, so a request cannot forge a line.
"""

from __future__ import annotations

import logging
import re

log = logging.getLogger("shepherd.rm.audit")

SUCCESS = "SUCCESS"
FAILURE = "FAILURE"
MAX_VALUE = 256
_UNSAFE = re.compile(r"[\t\r\n\x00-\x1f\x7f]")

# YARN's operation names (RMAuditLogger.AuditConstants), and shepherd's for what YARN has none of
NEW_APP = "Get New App"
SUBMIT_APP = "Submit Application Request"
KILL_APP = "Kill Application Request"
MOVE_APP = "Move Application Request"
UPDATE_PRIORITY = "Update Application Priority"
UPDATE_TIMEOUTS = "Update Application Timeouts"
UPDATE_DEADLINE = "Update Application Deadline"
NEW_RESERVATION = "Create New Reservation Request"
SUBMIT_RESERVATION = "Submit Reservation Request"
UPDATE_RESERVATION = "Update Reservation Request"
DELETE_RESERVATION = "Delete Reservation Request"
REGISTER_NODE = "Register Node"
GET_DELEGATION_TOKEN = "Get Delegation Token"
SLO_DECISION = "SLO Proposal Decision"
PLAN = "Dry Run"
REFRESH_QUEUES = "Refresh Queues"
DECOMMISSION_NODE = "Decommission Node"
RECOMMISSION_NODE = "Recommission Node"
ISSUE_USER_TOKEN = "Issue User Token"
REFRESH_NODES = "Refresh Nodes"
REFRESH_ADMIN_ACLS = "Refresh Admin ACLs"

REST = "RMWebService"
CLIENT_SERVICE = "ClientRMService"  # gRPC and Hadoop IPC clients
RESOURCE_TRACKER = "ResourceTrackerService"
ADMIN_SERVICE = "AdminService"  # the Hadoop IPC admin protocol (rmadmin)


def clean(value: object) -> str:
    text = _UNSAFE.sub(" ", str(value))
    return text if len(text) <= MAX_VALUE else text[:MAX_VALUE] + "..."


def line(*, user: str, ip: str, operation: str, target: str, ok: bool, description: str = "",
         app_id: str = "", **extra: str) -> str:
    parts = [("USER", user or "dr.who"), ("IP", ip or "-"), ("OPERATION", operation), ("TARGET", target),
             ("RESULT", SUCCESS if ok else FAILURE)]
    if not ok:
        parts.append(("DESCRIPTION", description or "refused"))
    if app_id:
        parts.append(("APPID", app_id))
    parts += [(k.upper(), v) for k, v in extra.items() if v]
    return "\t".join(f"{k}={clean(v)}" for k, v in parts)


def record(*, user: str, ip: str, operation: str, target: str, ok: bool, description: str = "",
           app_id: str = "", **extra: str) -> None:
    """Log one audit line (INFO when allowed, WARNING when refused)."""
    text = line(user=user, ip=ip, operation=operation, target=target, ok=ok, description=description,
                app_id=app_id, **extra)
    log.log(logging.INFO if ok else logging.WARNING, "%s", text)


def peer_ip(peer: str) -> str:
    """The address of a gRPC peer (``ipv4:127.0.0.1:5312``, ``ipv6:[::1]:5312``) or ``host:port``."""
    for prefix in ("ipv4:", "ipv6:", "unix:"):
        if peer.startswith(prefix):
            peer = peer[len(prefix):]
            break
    if peer.startswith("["):
        return peer[1:].split("]", 1)[0]
    host, sep, _ = peer.rpartition(":")
    return host if sep else peer
