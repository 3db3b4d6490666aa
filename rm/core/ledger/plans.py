"""Scheduling on the ledger: the snapshot a cycle reads, applying the plan it returns (placements become
containers, preemptions end them), and the reservation plan's dynamic reprovisioning."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace

from common import ids, tokens
from common.exits import EXIT_PREEMPTED
from common.ids import AppId, ContainerId, NodeId
from common.resources import Resources
from rm.core.deadlines.book import no_fixed_load
from rm.core.deadlines.view import NO_DEADLINES, units_done
from rm.core.entities import App, Container
from rm.core.events import PlanApplied
from rm.core.ledger.base import LedgerBase
from rm.core.ledger.node_facts import NodeFacts
from rm.core.model import AppView, AskView, ClusterSnapshot, NodeView
from rm.core.plan import Place, Plan
from rm.core.preemption import choose_victims
from rm.core.reservation import dra
from rm.core.reservation.requests import ReservationDefinition
from rm.core.reservation.system import ReservationRejected
from rm.core.reservation.view import EMPTY_VIEW
from rm.core.state_types import AM_ASK_ID, LaunchAM

PREEMPTED_DIAG = "Container preempted by the scheduler: its capacity is reserved ({reason}, {rid})"
_BREAKS_DEADLINES = ("The reservation {rid} would take capacity that admitted deadlines hold: not admitted "
                     "(an earlier or smaller reservation may fit)")
PLAN_COUNTERS = ("reservation_reclaims", "placed_in_reservation", "deadline_reclaims", "placed_for_deadline",
                 "guarantee_reclaims", "placed_for_guarantee")
"""Summed from every applied plan."""


class PlanCommands(LedgerBase):

    def apply_plan(self, plan: Plan, now: float) -> list[Place]:
        """Turn placements into containers; returns the placements that were applied."""
        applied: list[Place] = []
        for p in plan.placements:
            app = self.apps.get(p.app_id)
            node = self.nodes.get(p.node_id)
            if app is None or app.final or node is None or not node.schedulable:
                continue
            att = app.current
            if att is None or att.final:
                continue
            if not (node.allocated + p.resource).fits_in(node.capability):
                continue
            if p.is_am:
                if not att.am_ask_pending:
                    continue
            else:
                ask = att.asks.get(p.allocation_request_id)
                if ask is None or ask.num_containers <= 0:
                    continue
            cid = ids.container_id(att.attempt_id, att.next_container_seq, self.meta.epoch)
            att.next_container_seq += 1
            c = Container(
                container_id=cid, app_id=app.app_id, attempt_id=att.attempt_id, node_id=node.node_id,
                resource=p.resource, priority=p.priority, allocation_request_id=p.allocation_request_id,
                ask_type=p.ask_type, is_am=p.is_am, state="ALLOCATED", allocate_time=now,
                from_leftover=p.from_leftover,
            )
            if self.config.durable:
                c.token = tokens.container_token(self.container_key, tokens.ContainerTokenFields(
                    container_id=cid, node_id=node.node_id, app_id=app.app_id, user=app.user,
                    resource=p.resource.to_dict(), expires=now + self.config.container_token_lifetime_s,
                ), key_id=self.container_key_id)
            self.containers[cid] = c
            node.containers.add(cid)
            self._allocate_on(node, p.resource)
            self.views.app_changed(app.app_id)
            app.containers.add(cid)
            app.ran_on.add(node.node_id)
            app.used = app.used + p.resource
            self.counters["containers_allocated"] += 1
            if p.from_leftover:
                app.leftover_containers += 1
                self.counters["leftover_containers"] += 1
            if p.is_am:
                app.am_used = app.am_used + p.resource
                att.am_ask_pending = False
                att.am_container_id = cid
                att.node_id = node.node_id
                att.state = "ALLOCATED"
                att.last_contact = now
                app.launch_time = now
                self._mark(att)
                self._touch_app(app)
                amrm = tokens.amrm_token(self.amrm_key, att.attempt_id)
                self.amrm_tokens.add(amrm, (app.app_id, att.attempt_id))  # minted here: no need to verify it
                self._launches.append(LaunchAM(
                    app_id=app.app_id, attempt_id=att.attempt_id, container_id=cid, node_id=node.node_id,
                    container_token=c.token,
                    nm_token=tokens.nm_token(self.container_key, att.attempt_id, node.node_id,
                                             key_id=self.container_key_id)
                    if self.config.durable else "",
                    amrm_token=amrm, launch=app.am_launch,
                    job_spec_json=app.job_spec_json, user=app.user,
                ))
            else:
                ask = att.asks[p.allocation_request_id]
                ask.num_containers -= 1
                att.undelivered.append(cid)
                self.sizes.placed(app.app_id, cid)  # a gated app's first task containers are its pilots
            self._mark(c)
            applied.append(p)
        for app_id, share in plan.shares.items():
            app = self.apps.get(app_id)
            if app is not None and app.fair_share != share:
                app.fair_share = share
                self.views.app_changed(app_id)
        if plan.guarantees is not None:
            self._record_grants(plan.guarantees, plan.ceilings)
        self._apply_preemptions(plan, now)
        for key in PLAN_COUNTERS:
            n = plan.counters.get(key, 0)
            if n:
                self.counters[key] = self.counters.get(key, 0) + n
        self.last_plan = plan
        self._emit(PlanApplied(plan, tuple(applied), now))
        return applied


    def _record_grants(self, floors: Mapping[AppId, Resources], ceilings: Mapping[AppId, Resources]) -> None:
        """Each app keeps the floor the ``guarantee`` stage served it in this plan, and its ceiling; an app the
        stage granted something in the previous plan and not in this one (it no longer asks for a guarantee,
        or the cycle no longer sees it) keeps neither."""
        earlier = self.last_plan.guarantees if self.last_plan is not None else None
        for app_id in (earlier or {}).keys() - floors.keys():
            app = self.apps.get(app_id)
            if app is not None:
                app.granted = None
                app.guarantee_ceiling = None
        for app_id, floor in floors.items():
            app = self.apps.get(app_id)
            if app is not None:
                app.granted = floor
                app.guarantee_ceiling = ceilings.get(app_id)

    def _apply_preemptions(self, plan: Plan, now: float) -> int:
        """Preempt each victim app's newest non-AM containers until the asked amount is covered (exit -102;
        the NodeManager is told to clean them up, the AM gets them as completed). Returns how many.

        Containers on one node are preferred when that node's free room plus them covers the amount, so the
        blocked ask fits there next cycle instead of the reclaim repeating over freed but scattered room."""
        count = 0
        for p in plan.preemptions:
            app = self.apps.get(AppId(p.app_id))
            if app is None or app.final:
                continue
            for c in self._victims(app.containers, p.amount):
                self._complete_container(c, EXIT_PREEMPTED, PREEMPTED_DIAG.format(reason=p.reason,
                                                                                 rid=p.for_reservation), now)
                node = self.nodes.get(c.node_id)
                if node is not None:
                    node.to_cleanup.add(c.container_id)
                count += 1
                self.preempted_by_reason[p.reason] = self.preempted_by_reason.get(p.reason, 0) + 1
        self.counters["containers_preempted"] = self.counters.get("containers_preempted", 0) + count
        return count

    def _victims(self, owned: Iterable[ContainerId], amount: Resources) -> list[Container]:
        live = [c for c in (self.containers.get(cid) for cid in owned) if c is not None and c.live and not c.is_am]
        newest = sorted(live, key=lambda c: (c.allocate_time, c.container_id), reverse=True)

        def free_room(node_id: NodeId) -> Resources | None:
            node = self.nodes.get(node_id)
            if node is None or not node.schedulable:
                return None
            return (node.capability - node.allocated).clamp_min_zero()

        return choose_victims(newest, amount, node_of=lambda c: c.node_id, resource_of=lambda c: c.resource,
                              free_room=free_room)

    def reprovision(self, now: float) -> dra.DraRound:
        """One round of dynamic reprovisioning (Morpheus §7) over the apps' used + pending demand; counts its
        outcomes and the extra containers it booked."""
        system = self.reservation_plan()
        got = dra.evaluate(system, dra.demands_from_snapshot(self.snapshot(), system), now=now)
        for d in got.decisions:
            self.dra_outcomes[d.outcome] = self.dra_outcomes.get(d.outcome, 0) + 1
            if d.granted:
                self.counters["reservation_extension_containers"] = (
                    self.counters.get("reservation_extension_containers", 0) + d.granted
                )
        return got

    def submit_reservation(self, rid: str, queue: str, definition: ReservationDefinition, *, user: str,
                           now: float) -> None:
        """A reservation is admitted only if every admitted deadline still fits beside it (try-and-commit
        over the queue's one ledger of promises)."""
        plan = self.reservation_plan()
        res = plan.submit(rid, queue, definition, user=user, now=now)
        if not self._deadlines_kept():
            plan.delete(res.reservation_id)
            self.deadline_system()
            raise ReservationRejected(_BREAKS_DEADLINES.format(rid=rid), "DEADLINES_WOULD_BREAK",
                                      {"queue": str(res.queue), "deadlines": len(self.deadlines.held)})

    def update_reservation(self, rid: str, definition: ReservationDefinition, *, now: float) -> None:
        plan = self.reservation_plan()
        old = plan.get(rid).definition
        plan.update(rid, definition, now=now)
        if not self._deadlines_kept():
            plan.update(rid, old, now=now)
            self.deadline_system()
            raise ReservationRejected(_BREAKS_DEADLINES.format(rid=rid), "DEADLINES_WOULD_BREAK",
                                      {"deadlines": len(self.deadlines.held)})

    def _deadlines_kept(self) -> bool:
        if not self.deadlines.held:
            return True
        system = self.deadline_system()  # its books now see the reservations' new bookings
        return all(book.fits_with(no_fixed_load) for book in system.books.values())

    def has_pending(self) -> bool:
        """Whether any unfinished app waits for a container."""
        for app in self.active.values():
            att = app.current
            if att is not None and not att.final and (
                    att.am_ask_pending or any(a.num_containers > 0 for a in att.asks.values())):
                return True
        return False

    def snapshot(self, now: float | None = None) -> ClusterSnapshot:
        """The cycle's read-only view; with ``now``, the reservations active at that time too."""
        self.sizes.flush()
        views = self.views
        follow = bool(self.reservations.app_reservation) or self.attached_views
        if follow:  # apps enter and leave reservations through the reservation API too
            for aid, av in views.apps.items():
                if av.reservation_id != self.reservations.reservation_of(aid):
                    views.app_changed(aid)
        if now is not None:
            self._views_now = now
            for app_id in self.sizes.gated():  # gates that time out or whose apps got a guarantee open now
                gated = self.apps.get(app_id)
                if gated is not None and not gated.final:
                    self.sizes.pilots_left(gated, 0, 0, now)
        rebuilt = list(views.dirty_nodes)
        views.build(self._node_view, self._app_view)
        nodes = dict(views.nodes)
        self.layout.note(rebuilt, nodes)
        self.attached_views = follow and any(av.reservation_id is not None for av in views.apps.values())
        view = EMPTY_VIEW
        if now is not None and self.reservations.reservations:
            view = self.reservation_plan().view(now)
        deadlines = NO_DEADLINES
        if now is not None and self.deadlines.held:
            deadlines = self.deadline_system().view(now, lambda app_id: self._running_work(app_id, now))
        return ClusterSnapshot(version=self.version, nodes=nodes, apps=dict(views.apps),
                               queues=self.queues, reservations=view, deadlines=deadlines,
                               total=self.cluster_capacity(), layout=self.layout)

    def _running_work(self, app_id: AppId, now: float) -> float:
        """Unit-seconds the app's running task containers did so far (a deadline claim's progress)."""
        app = self.apps.get(app_id)
        if app is None:
            return 0.0
        unit = self.deadlines.config.unit
        out = 0.0
        for cid in app.containers:
            c = self.containers.get(cid)
            if c is not None and c.live and not c.is_am and 0 < c.start_time < now:
                out += units_done(c.resource, now - c.start_time, unit)
        return out

    def _node_view(self, node_id: NodeId) -> NodeView | None:
        n = self.nodes.get(node_id)
        if n is None:
            return None
        return NodeView(node_id=n.node_id, host=n.host, rack=n.rack, capability=n.capability,
                        allocated=n.allocated, schedulable=n.schedulable)

    def _app_view(self, app_id: AppId) -> AppView | None:
        app = self.apps.get(app_id)
        att = app.current if app is not None else None
        if app is None or app.final or att is None or att.final:
            return None
        asks: list[AskView] = []
        if att.am_ask_pending:
            asks.append(AskView(app_id=app.app_id, allocation_request_id=AM_ASK_ID, priority=-1,
                                capability=app.am_resource, num_containers=1, is_am=True, stage="am"))
        for a in att.asks.values():
            if a.num_containers > 0:
                asks.append(AskView(
                    app_id=app.app_id, allocation_request_id=a.allocation_request_id, priority=a.priority,
                    capability=a.capability, num_containers=a.num_containers, nodes=a.nodes, racks=a.racks,
                    relax_locality=a.relax_locality, ask_type=a.ask_type,
                    remaining_work_s=a.remaining_work_s, stage=a.stage,
                ))
        held: tuple[AskView, ...] = ()
        if self.sizes.sampling and self.sizes.apps.get(app.app_id) is not None:
            asks, held = self._gate(app, asks)
        if not asks and not held and app.used.is_zero():
            return None
        return AppView(
            app_id=app.app_id, queue=app.queue, user=app.user, priority=app.priority,
            submit_time=app.submit_time, used=app.used, asks=tuple(asks), am_used=app.am_used,
            blacklist=frozenset(att.blacklist), reservation_id=self.reservations.reservation_of(app.app_id),
            fair_share=None if app.fair_share.is_zero() else app.fair_share,
            size_hint_s=app.terms.size.remaining_s if app.terms.size is not None else None,
            weight=app.weight, terms=app.terms, held=held, thin=self.sizes.thin(app.app_id),
        )

    def _gate(self, app: App, asks: list[AskView]) -> tuple[list[AskView], tuple[AskView, ...]]:
        """A gated app's asks trimmed to the pilots it may still start, and its task asks in full (held)."""
        running = sum(1 for cid in app.containers
                      if (c := self.containers.get(cid)) is not None and c.live and not c.is_am)
        # after a restart, its containers whose NodeManager has not yet said whether they run count too
        running += sum(1 for u in self.unconfirmed.values() if u.app_id == app.app_id and not u.is_am)
        tasks = [a for a in asks if not a.is_am]
        left = self.sizes.pilots_left(app, running, sum(a.num_containers for a in tasks), self._views_now)
        if left is None:
            return asks, ()
        out = [a for a in asks if a.is_am]
        for a in sorted(tasks, key=lambda a: (a.priority, a.allocation_request_id)):
            take = min(a.num_containers, left)
            left -= take
            if take:
                out.append(replace(a, num_containers=take))
        return out, tuple(tasks)

    def check_views(self) -> list[str]:
        """Where the incrementally kept views differ from views built afresh (empty when they agree)."""
        self.views.build(self._node_view, self._app_view)
        problems: list[str] = []
        fresh_nodes: dict[str, object] = {nid: nv for nid in self.nodes if (nv := self._node_view(nid)) is not None}
        fresh_apps: dict[str, object] = {aid: av for aid in self.apps if (av := self._app_view(aid)) is not None}
        kept_nodes: dict[str, object] = {str(k): v for k, v in self.views.nodes.items()}
        kept_apps: dict[str, object] = {str(k): v for k, v in self.views.apps.items()}
        for kind, kept, fresh in (("node", kept_nodes, fresh_nodes), ("app", kept_apps, fresh_apps)):
            for key in sorted(kept.keys() | fresh.keys()):
                if kept.get(key) != fresh.get(key):
                    problems.append(f"{kind} {key}: kept {kept.get(key)} != fresh {fresh.get(key)}")
        if self.headroom() != (free := self._free_afresh()):
            problems.append(f"headroom kept {self.headroom()} != fresh {free}")
        problems += self._node_facts().differences(NodeFacts(self.nodes.values()))
        return problems
