"""Decommissioning NodeManagers (YARN's ``rmadmin -refreshNodes [-g TIMEOUT]``) and bringing them back.

A graceful decommission puts a node in DECOMMISSIONING: it gets no new containers (only RUNNING nodes are
schedulable) while the ones it runs go on. Once none is left, or its timeout passes, it becomes DECOMMISSIONED:
the containers still there are killed (exit ABORTED, which does not count against their attempts; their AMs
hear of them on their next allocate call) and its NodeManager is told to shut down on its next heartbeat.
A decommission without a timeout does all that at once. A decommissioned node may not register again until it
is recommissioned. The state and the deadline are durable: a restarted RM keeps them.

Unlike YARN, a decommissioning node waits for its containers only, not for every application that ran on it
to finish (shepherd keeps no shuffle data on the nodes).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from common.errors import BadRequest, Conflict, NotFound
from common.ids import NodeId
from rm.core.entities import GONE_NODE_STATES, Node
from rm.core.ledger.recovery import Recovery

DECOMMISSIONED_DIAG = "Container released on a *decommissioned* node"


@dataclass(frozen=True, slots=True)
class Decommission:
    node: Node
    changed: bool  # False: it was already in the state asked for; nothing changed


def refusal(node: Node | None) -> str:
    """Why a NodeManager may not register as this node ("" if it may)."""
    if node is not None and node.state == "DECOMMISSIONED":
        return (f"Disallowed NodeManager {node.node_id}: it is decommissioned; recommission it "
                "(`shepherd admin recommission`) before starting it again")
    return ""


class Decommissioning(Recovery):

    def get_node(self, node_id: str) -> Node:
        """A node by id; ``NotFound`` (YARN's 404) for one the RM has never seen."""
        node = self.nodes.get(NodeId(node_id.strip()))
        if node is None:
            raise NotFound(f"nodeId, {node_id}, is not found")
        return node

    def decommission(self, node_id: str, timeout_s: float | None, now: float) -> Decommission:
        """Decommission a node: gracefully within ``timeout_s`` seconds, or at once (None). Asking again for a
        decommissioning node sets its new deadline (or ends it now); a decommissioned one stays as it is."""
        if timeout_s is not None and (not math.isfinite(timeout_s) or timeout_s < 0):
            raise BadRequest(f"the graceful decommission timeout must be a number of seconds >= 0, not {timeout_s}")
        node = self.get_node(node_id)
        if node.state == "DECOMMISSIONED":
            return Decommission(node, changed=False)
        if timeout_s is None or node.state in GONE_NODE_STATES or not self._live_on(node):
            self._end_decommission(node, now)
            return Decommission(node, changed=True)
        node.decommission_deadline = now + timeout_s
        if node.state != "NEW":  # a node yet to re-register after a restart becomes DECOMMISSIONING when it does
            node.state = "DECOMMISSIONING"
        self._nodes_changed(node)
        self._mark(node)
        return Decommission(node, changed=True)

    def recommission(self, node_id: str, now: float) -> Decommission:
        """Bring a node back: a decommissioning one is schedulable again at once; a decommissioned one may
        register again (it is NEW until its NodeManager, started again, does)."""
        node = self.get_node(node_id)
        if node.state not in ("DECOMMISSIONING", "DECOMMISSIONED") and not node.decommission_deadline:
            return Decommission(node, changed=False)
        if node.state == "DECOMMISSIONED":
            node.state = "NEW"
            node.last_heartbeat = now  # the liveness check gives it the node expiry to come back, then LOST
        elif node.state == "DECOMMISSIONING":
            node.state = "RUNNING"
        node.decommission_deadline = 0.0
        self._nodes_changed(node)
        self._mark(node)
        self.capacity_freed = True
        return Decommission(node, changed=True)

    def _live_on(self, node: Node) -> bool:
        if any(c.node_id == node.node_id for c in self.unconfirmed.values()):
            return True
        return any((c := self.containers.get(cid)) is not None and c.live for cid in node.containers)

    def _end_decommission(self, node: Node, now: float) -> None:
        """DECOMMISSIONED: what still runs there is killed and its AMs hear of it."""
        node.decommission_deadline = 0.0
        self._lose_node(node, "DECOMMISSIONED", DECOMMISSIONED_DIAG, now)
        self._forget_unconfirmed(node, now)

    def _decommission_progress(self, node: Node, now: float) -> bool:
        """After a heartbeat or on the liveness check: a decommissioning node with nothing left running, or
        past its deadline, is DECOMMISSIONED. True if it is now."""
        if node.state != "DECOMMISSIONING" and not (node.state == "NEW" and node.decommission_deadline):
            return False
        if now >= node.decommission_deadline or (node.state == "DECOMMISSIONING" and not self._live_on(node)):
            self._end_decommission(node, now)
            return True
        return False

    def check_decommissioning(self, now: float) -> list[str]:
        """End the graceful decommissions whose time is up or whose nodes ran dry. Returns log lines."""
        events: list[str] = []
        for node in list(self.nodes.values()):
            if node.decommission_deadline and self._decommission_progress(node, now):
                events.append(f"node {node.node_id} decommissioned")
        return events

    def _check_may_register(self, node_id: NodeId) -> None:
        why = refusal(self.nodes.get(node_id))
        if why:
            raise Conflict(why)
