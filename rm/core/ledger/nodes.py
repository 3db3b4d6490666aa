"""NodeManager commands: register, heartbeat (container statuses in, clean-up orders out), unregister; and
the liveness checks that expire silent nodes, AMs and unused containers."""

from __future__ import annotations

from collections.abc import Iterable

from common.errors import BadRequest, NotFound
from common.exits import EXIT_ABORTED
from common.ids import ContainerId, NodeId
from common.resources import MEMORY, VCORES, Resources
from rm.core.entities import Node
from rm.core.ledger.decommission import Decommissioning
from rm.core.state_types import HeartbeatResult, NodeStatus


class NodeCommands(Decommissioning):
    """(Node re-registrations finish what recovery started: they say which containers still run.)"""

    def register_node(
        self,
        node_id: str,
        http_address: str,
        rack: str,
        capability: Resources,
        statuses: Iterable[NodeStatus],
        now: float,
        *,
        ipc_port: int = 0,
        session_hash: str = "",
    ) -> Node:
        host, sep, port = node_id.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise BadRequest(f"invalid node id {node_id!r}; expected host:port")
        if capability.any_negative() or capability.get(MEMORY) <= 0 or capability.get(VCORES) <= 0:
            raise BadRequest(f"node capability must offer memory-mb and vcores: {capability}")
        known = self.config.resource_types
        if known is not None:  # as YARN's RM, skip the types the cluster does not define
            capability = Resources({t: v for t, v in capability.amounts.items() if t in known})
        nid = NodeId(node_id)
        self._check_may_register(nid)
        old = self.nodes.get(nid)
        reported = {ContainerId(s.container_id): s for s in statuses}
        kept: set[ContainerId] = set()
        if old is not None:  # a re-registration: it keeps what it says still runs
            for cid in list(old.containers):
                c = self.containers.get(cid)
                if c is None or not c.live:
                    continue
                s = reported.get(cid)
                if s is not None or c.state == "ACQUIRED":  # reported, or its AM may still start it
                    kept.add(cid)
                else:
                    self._complete_container(c, EXIT_ABORTED, "Container not running on the re-registered node",
                                             now)
        deadline = old.decommission_deadline if old is not None else 0.0  # a decommissioning node stays so
        node = Node(
            node_id=nid, host=host, port=int(port), http_address=http_address, rack=rack or "/default-rack",
            capability=capability, state="DECOMMISSIONING" if deadline else "RUNNING", registered_at=now,
            last_heartbeat=now, last_health_update=now, ipc_port=ipc_port if 0 < ipc_port < 65536 else 0,
            containers=kept, allocated=old.allocated if old is not None else Resources(),
            decommission_deadline=deadline, session_hash=session_hash,
        )
        self.nodes[nid] = node
        self._nodes_changed(node)
        if self.unconfirmed:
            self._adopt(node, reported, now)
        self._take_statuses(node, reported.values(), now)
        self._mark(node)
        self._decommission_progress(node, now)
        return node

    def node_heartbeat(
        self,
        node_id: str,
        response_id: int,
        statuses: Iterable[NodeStatus],
        healthy: bool,
        health_report: str,
        now: float,
    ) -> HeartbeatResult:
        node = self.nodes.get(NodeId(node_id))
        if node is not None and node.state == "DECOMMISSIONED":
            return HeartbeatResult(response_id=0, action="SHUTDOWN", diagnostics=f"node {node_id} is decommissioned")
        if node is None or node.state in ("LOST", "NEW", "SHUTDOWN"):
            return HeartbeatResult(response_id=0, action="RESYNC",
                                   diagnostics="Node not found or not registered; re-register")
        node.last_heartbeat = now
        node.response_id += 1
        new_state = "DECOMMISSIONING" if node.state == "DECOMMISSIONING" else "RUNNING" if healthy else "UNHEALTHY"
        if new_state != node.state or health_report != node.health_report:
            node.state = new_state
            node.health_report = health_report
            node.last_health_update = now
            self._nodes_changed(node)
            self._mark(node)
        self._take_statuses(node, statuses, now)
        if self._decommission_progress(node, now):  # its last container ended: it shuts down now
            return HeartbeatResult(response_id=node.response_id, action="SHUTDOWN",
                                   diagnostics=f"node {node_id} is decommissioned")
        cleanup = tuple(sorted(node.to_cleanup))
        node.to_cleanup.clear()
        apps = tuple(sorted(node.apps_to_cleanup))
        node.apps_to_cleanup.clear()
        return HeartbeatResult(response_id=node.response_id, action="NORMAL", containers_to_cleanup=cleanup,
                               apps_to_cleanup=apps)

    def _take_statuses(self, node: Node, statuses: Iterable[NodeStatus], now: float) -> None:
        """What a NodeManager reports of its containers: started ones run, completed ones end, and those the
        RM does not know on this node (or gave up on) are to be stopped. Starts are taken before ends, so that
        a container its AM launched just before dying still counts as running when the AM's end fails the attempt
        (and passes to the next one, with keep-containers)."""
        for s in sorted(statuses, key=lambda s: s.state == "COMPLETE"):
            cid = ContainerId(s.container_id)
            c = self.containers.get(cid)
            if c is None or c.node_id != node.node_id or (not c.live and s.state != "COMPLETE"):
                if s.state != "COMPLETE":  # unknown here, or given up on (its node was lost): stop it
                    node.to_cleanup.add(cid)
                continue
            c.on_node = c.on_node or s.state in ("NEW", "RUNNING")
            if s.state == "RUNNING" and c.state in ("ALLOCATED", "ACQUIRED"):
                c.state = "RUNNING"
                c.start_time = s.start_time or now
                self._mark(c)
                app = self.apps.get(c.app_id)
                if c.is_am and app is not None:
                    att = self._attempt(app, c.attempt_id)
                    if att is not None and att.state in ("ALLOCATED", "SCHEDULED"):
                        att.state = "LAUNCHED"
                        att.last_contact = now
                        self._mark(att)
                    if att is not None and att is app.current and app.state == "ACCEPTED":
                        self._app_started(app, now)  # the AM process runs, whether or not it ever registers
            elif s.state == "RUNNING" and c.is_am and c.live:
                # an AM that never registers (any plain command) stays alive while its container runs
                app = self.apps.get(c.app_id)
                att = self._attempt(app, c.attempt_id) if app is not None else None
                if att is not None and not att.registered and not att.final:
                    att.last_contact = now
            elif s.state == "COMPLETE":
                node.to_cleanup.discard(cid)
                if c.live:
                    self._complete_container(c, s.exit_status, s.diagnostics, now,
                                             start_time=s.start_time)

    def unregister_node(self, node_id: str, now: float) -> None:
        node = self.nodes.get(NodeId(node_id))
        if node is None:
            raise NotFound(f"node {node_id} is not registered")
        if node.state == "DECOMMISSIONED":  # it shuts down as told; it stays decommissioned
            return
        node.session_hash = ""  # it is gone: any NodeManager with the node secret may register as it again
        self._lose_node(node, "SHUTDOWN", "Container released on a node that shut down", now)


    def am_launch_failed(self, container_id: str, diag: str, now: float) -> None:
        c = self.containers.get(ContainerId(container_id))
        if c is not None and c.live:
            self._complete_container(c, EXIT_ABORTED, f"AM container launch failed: {diag}", now)


    def check_liveness(self, now: float) -> list[str]:
        """Expire silent NodeManagers, ApplicationMasters and unused containers. Returns log lines."""
        events: list[str] = []
        for node in list(self.nodes.values()):
            if node.state in ("RUNNING", "UNHEALTHY", "NEW", "DECOMMISSIONING") and \
                    now - node.last_heartbeat > self.config.nm_expiry_s:
                events.append(f"node {node.node_id} expired: no heartbeat for {now - node.last_heartbeat:.1f}s")
                self._lose_node(node, "LOST", "Container released on a *lost* node", now)
                self._forget_unconfirmed(node, now)
        events += self.check_decommissioning(now)
        for app in list(self.apps.values()):
            att = app.current
            if app.final or att is None or att.final:
                continue
            if att.state in ("LAUNCHED", "RUNNING", "ALLOCATED") and now - att.last_contact > self.config.am_expiry_s:
                events.append(f"attempt {att.attempt_id} expired: no AM heartbeat")
                self._attempt_failed(app, att, f"ApplicationMaster for attempt {att.attempt_id} timed out",
                                     counts=True, now=now)
        for app in list(self.apps.values()):
            if not app.final and app.lifetime_expiry and now >= app.lifetime_expiry:
                events.append(f"application {app.app_id} exceeded its lifetime; killing it")
                self._kill_app(app, "Application is killed by ResourceManager as it has exceeded the "
                               "lifetime period.", now)
        for c in list(self.containers.values()):
            if c.confirm_by and c.state == "ACQUIRED" and not c.on_node and now > c.confirm_by:
                events.append(f"container {c.container_id} passed on from a failed attempt was never started")
                self._complete_container(c, EXIT_ABORTED, "Container was not started before its AM failed", now)
            elif c.state in ("ALLOCATED", "ACQUIRED") and not c.is_am and \
                    now - c.allocate_time > self.config.container_alloc_expiry_s:
                events.append(f"container {c.container_id} expired unused")
                self._complete_container(c, EXIT_ABORTED, "Container expired since it was unused", now)
                holder = self.nodes.get(c.node_id)
                if holder is not None:
                    holder.to_cleanup.add(c.container_id)
        return events

    def forget_completed_containers(self, keep_per_app: int = 1000) -> None:
        """Drop completed containers from memory (they stay in the store)."""
        done = [c for c in self.containers.values() if not c.live]
        if len(done) > keep_per_app * 10:
            done.sort(key=lambda c: c.finish_time)
            for c in done[: len(done) - keep_per_app * 10]:
                del self.containers[c.container_id]

