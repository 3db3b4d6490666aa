"""The ApplicationMaster protocol: register, allocate (ask-table updates, releases, delivery of new
containers and completed statuses) and finish."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from common import ids, tokens
from common.errors import (
    ApplicationAttemptNotFound,
    ApplicationMasterNotRegistered,
    BadRequest,
    Conflict,
    InvalidApplicationMasterRequest,
    InvalidResourceRequest,
    InvalidToken,
)
from common.exits import EXIT_KILLED_BY_APPMASTER
from common.ids import AttemptId, ContainerId, NodeId
from common.terms import NO_SIGNALS, AmSignals
from rm.core.entities import App, Ask, Attempt
from rm.core.ledger.base import LedgerBase
from rm.core.state_types import MAX_ASK_CONTAINERS, AllocatedContainer, AllocateResult

MAX_CHECKPOINT_BYTES = 256 * 1024  # what an AM may keep of its progress with its app
CONTROL_TRACE_CAP = 500  # of an app's control decisions, the newest kept (the SLO report shows them)


class AmCommands(LedgerBase):
    def authenticate_am(self, token: str) -> tuple[App, Attempt]:
        known = self.amrm_tokens.get(token)
        if known is None:  # AMRM tokens do not expire: one verification per token is enough
            try:
                attempt_id = AttemptId(tokens.read_amrm_token(self.amrm_key, token))
                app_id = ids.app_of_attempt(attempt_id)
            except (tokens.InvalidToken, ValueError) as exc:
                raise InvalidToken(f"Invalid AMRMToken: {exc}") from exc
            self.amrm_tokens.add(token, (app_id, attempt_id))
        else:
            app_id, attempt_id = known
        app = self.apps.get(app_id)
        att = self._attempt(app, attempt_id) if app is not None else None
        if app is None or att is None:
            raise InvalidToken(f"Invalid AMRMToken: unknown attempt {attempt_id}")
        return app, att

    def am_register(self, token: str, host: str, rpc_port: int, tracking_url: str, now: float) -> Attempt:
        app, att = self.authenticate_am(token)
        if att.final or app.final:
            raise InvalidToken(f"attempt {att.attempt_id} is {att.state}; it may not register")
        if att.registered:
            raise Conflict(f"Application Master is already registered : {app.app_id}")
        att.registered = True
        att.state = "RUNNING"
        att.host = host
        att.rpc_port = rpc_port
        att.tracking_url = tracking_url
        att.last_contact = now
        app.tracking_url = tracking_url
        self._mark(att)
        if app.state != "RUNNING":  # not yet started by its AM container, nor carried over a restart
            self._app_started(app, now)
        return att

    def validate_asks(self, asks: Iterable[Ask]) -> None:
        lim = self._resource_limits()  # the same for every ask of the call
        for a in asks:
            if a.num_containers < 0 or a.num_containers > MAX_ASK_CONTAINERS:
                raise InvalidResourceRequest(f"ask {a.allocation_request_id}: num_containers out of range")
            if a.allocation_request_id < 0:
                raise InvalidResourceRequest("allocation_request_id must not be negative")
            if a.num_containers:
                self.accepted_amounts.check(a.capability, f"ask {a.allocation_request_id}", lim)

    def am_allocate(
        self,
        token: str,
        response_id: int,
        asks: list[Ask],
        releases: Iterable[str],
        progress: float,
        blacklist_add: Iterable[str],
        blacklist_remove: Iterable[str],
        now: float,
        *,
        signals: AmSignals = NO_SIGNALS,
        checkpoint: str | None = None,
    ) -> AllocateResult:
        app, att = self.authenticate_am(token)
        _refuse_superseded(app, att)
        if att.final or app.final:  # the app ended: its AM is told to go
            return AllocateResult(response_id=response_id, command="SHUTDOWN")
        if not att.registered:
            raise ApplicationMasterNotRegistered(
                f"AM is not registered for known application attempt: {att.attempt_id} or RM had restarted "
                "after AM registered. AM should re-register."
            )
        att.last_contact = now
        if att.last_response is not None and response_id + 1 == att.response_id:
            cached: AllocateResult = att.last_response
            return cached  # a duplicate of the last request
        if response_id != att.response_id:
            raise InvalidApplicationMasterRequest(
                f"Invalid responseId in AllocateRequest from application attempt: {att.attempt_id}, expect "
                f"responseId to be {att.response_id}, but get {response_id}"
            )
        self.validate_asks(asks)
        if checkpoint is not None and len(checkpoint.encode()) > MAX_CHECKPOINT_BYTES:
            raise BadRequest(f"the AM checkpoint is {len(checkpoint.encode())} bytes; at most "
                             f"{MAX_CHECKPOINT_BYTES} are kept")
        release_ids = list(releases)
        for cid in release_ids:
            c = self.containers.get(ContainerId(cid))
            if c is None or c.attempt_id != att.attempt_id or c.is_am:
                raise BadRequest(f"container {cid} does not belong to attempt {att.attempt_id}")
        # --- validated: apply
        changed = False
        # placed but not yet handed over, per ask: the AM's counts still include them
        undelivered = Counter(self.containers[cid].allocation_request_id for cid in att.undelivered) \
            if asks and att.undelivered else Counter()
        for a in asks:
            a.num_containers = max(0, a.num_containers - undelivered[a.allocation_request_id])
            if a.num_containers == 0:
                changed |= att.asks.pop(a.allocation_request_id, None) is not None
            else:
                old = att.asks.get(a.allocation_request_id)
                if old is None or a.num_containers > old.num_containers:
                    self.asks_grew = True
                att.asks[a.allocation_request_id] = a
                changed = True
        for cid in release_ids:
            c = self.containers[ContainerId(cid)]
            if c.live:
                self._complete_container(c, EXIT_KILLED_BY_APPMASTER, "Container released by application",
                                         now, notify=True)
                node = self.nodes.get(c.node_id)
                if node is not None:
                    node.to_cleanup.add(c.container_id)
        if blacklist_add or blacklist_remove:
            blacklist = set(att.blacklist)
            att.blacklist.update(NodeId(n) for n in blacklist_add)
            att.blacklist.difference_update(NodeId(n) for n in blacklist_remove)
            changed |= att.blacklist != blacklist
        if 0.0 <= progress <= 1.0 and progress != app.progress:
            app.progress = progress
        if checkpoint is not None and checkpoint != app.am_checkpoint:  # stored before the answer goes out
            app.am_checkpoint = checkpoint
            self._mark(app)
        terms = app.terms
        if signals.size is not None and signals.size.outranks(terms.size):
            terms = terms.with_size(signals.size)
        if signals.guarantee is not None:
            terms = terms.with_guarantee(signals.guarantee)
        if signals.model_build_s is not None:
            app.model_build_s = signals.model_build_s
        if signals.control:
            app.control.extend((now, step) for step in signals.control if step.finite())  # stored as JSON at its end
            del app.control[:-CONTROL_TRACE_CAP]
        if terms != app.terms:
            guarantee_changed = terms.guarantee != app.terms.guarantee
            app.terms = terms
            self.views.app_changed(app.app_id)
            if guarantee_changed and self.config.durable:  # kept across restarts (not a size, sent every call)
                self.journal.mark(app.record())
        if changed:
            self.version += 1
            self.views.app_changed(app.app_id)
        allocated: list[AllocatedContainer] = []
        nm_tokens = self._renewed_nm_tokens(att)
        for cid in att.undelivered:
            c = self.containers[cid]
            node = self.nodes[c.node_id]
            c.state = "ACQUIRED" if c.state == "ALLOCATED" else c.state
            allocated.append(AllocatedContainer(
                container_id=cid, node_id=c.node_id, node_http_address=node.http_address, resource=c.resource,
                priority=c.priority, allocation_request_id=c.allocation_request_id, token=c.token,
                ask_type=c.ask_type, from_leftover=c.from_leftover,
            ))
            if c.node_id not in att.nm_token_nodes and self.config.durable:
                att.nm_token_nodes.add(c.node_id)
                nm_tokens.append((c.node_id, self.nm_token_for(att, c.node_id)))
        att.undelivered.clear()
        completed = tuple(att.completed)
        att.completed.clear()
        if completed:  # a restarted RM hands over only what came after these
            att.delivered_until = max(att.delivered_until, max(s.finish_time for s in completed))
            self._mark(att)
        att.response_id += 1
        result = AllocateResult(
            response_id=att.response_id, allocated=tuple(allocated), completed=completed,
            fair_share=app.fair_share, headroom=self.headroom(), nm_tokens=tuple(nm_tokens),
            num_nodes=self.schedulable_nodes(), deadline=app.terms.deadline, granted_guarantee=app.granted,
            guarantee_ceiling=app.guarantee_ceiling,
        )
        att.last_response = result
        return result

    def inherited_containers(self, att: Attempt) -> list[AllocatedContainer]:
        """The running containers a failed attempt passed to ``att`` (for its registration answer)."""
        out = []
        for cid in att.inherited:
            c = self.containers.get(cid)
            if c is not None and c.live and c.attempt_id == att.attempt_id:
                node = self.nodes.get(c.node_id)
                out.append(AllocatedContainer(
                    container_id=cid, node_id=c.node_id, node_http_address=node.http_address if node else "",
                    resource=c.resource, priority=c.priority, allocation_request_id=c.allocation_request_id,
                    token=c.token, ask_type=c.ask_type, from_leftover=c.from_leftover))
        return out

    def nm_token_for(self, attempt: Attempt, node_id: NodeId) -> str:
        return tokens.nm_token(self.container_key, attempt.attempt_id, node_id, key_id=self.container_key_id)

    def _renewed_nm_tokens(self, att: Attempt) -> list[tuple[NodeId, str]]:
        """When the key that signs has changed since the attempt's NM tokens were made: new ones for every node
        it holds one for, so that they outlive the old key (the AM's token cache replaces them)."""
        key_id = self.container_key_id
        if att.nm_key_id == key_id:
            return []
        att.nm_key_id = key_id
        return [(n, self.nm_token_for(att, n)) for n in sorted(att.nm_token_nodes)]

    def am_finish(self, token: str, final_status: str, diagnostics: str, tracking_url: str,
                  now: float) -> bool:
        app, att = self.authenticate_am(token)
        _refuse_superseded(app, att)
        if app.final or att.final:
            return True
        if not att.registered:
            raise ApplicationMasterNotRegistered(f"attempt {att.attempt_id} is not registered")
        if final_status not in ("SUCCEEDED", "FAILED", "KILLED"):
            raise BadRequest(f"final status {final_status!r} is not one of SUCCEEDED, FAILED, KILLED")
        att.state = "FINISHING"
        att.diagnostics = diagnostics
        att.tracking_url = tracking_url or att.tracking_url
        self._mark(att)
        if app.unmanaged:  # no AM container whose exit would end the attempt
            self._end_attempt(app, att, "FINISHED", diagnostics, counts=False, now=now)
        # the attempt ends when the AM container exits; the app is done now
        self._finish_app(app, "FINISHED", final_status, diagnostics, now)
        return True


def _refuse_superseded(app: App, att: Attempt) -> None:
    """Fencing: an attempt that ended while its app goes on (failed, expired, replaced by a newer one) may no
    longer allocate or unregister; its calls are refused as YARN refuses them."""
    if att is not app.current or (att.final and not app.final):
        raise ApplicationAttemptNotFound(
            f"Application attempt {att.attempt_id} doesn't exist in ApplicationMasterService cache.")
