"""The ResourceManager's operations: one async method per request a client, an ApplicationMaster or a
NodeManager can make, whichever door (gRPC, REST, Hadoop IPC) it came through.

Each operation validates, applies in the core, writes what changed to the store (``await rm.persist()``)
before it returns, and wakes the scheduler (``rm.kick()``) when the change can place or free a container.
Its inputs and outputs are domain types (``SubmitSpec``, ``App``, ``AllocateResult``, ...); the doors parse
their wire format into those, call the operation and render the answer, so one request gets one answer
through every door. A refusal is a ``YarnError``, raised before anything changed; each door spells it
its own way (REST status and RemoteException, gRPC status, Hadoop RPC exception class).

The rules decided here once, following YARN's ClientRMService:

* an application's type defaults to ``YARN`` and is cut to 20 characters; its tags are trimmed, lower-cased
  and deduplicated (``shepherd.inputs=``/``shepherd.outputs=`` tags declare datasets, read before that);
* a zero memory or vcores in the AM resource means the default (1024 MB, 1 vcore); a negative one, or more
  than any node has, is an ``InvalidResourceRequest``;
* so is a DAG job file (``job_spec_json``, sent over gRPC) with a stage whose task is above the maximum
  allocation or of an unknown resource type (no node could ever hold it), naming the stage and the amount;
  before any node has registered only a configured maximum allocation or resource types
  (``yarn.resource-types``) refuse;
* submitting an application id the RM already has is answered as accepted and changes nothing (a client
  retrying after a lost answer), once the store has the app;
* killing an application that already ended is answered as done and changes nothing.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from common.errors import ApplicationAttemptNotFound, BadRequest, Conflict, ContainerNotFound, NotFound
from common.ids import AppId, ContainerId, NodeId, QueuePath, app_of_attempt, parse_container_id
from common.resources import MEMORY, VCORES, Resources
from common.terms import NO_SIGNALS, AmSignals, AppTerms
from rm.core import job_profiles
from rm.core.deadlines.system import Quote, Refusal
from rm.core.deadlines_glue import job_of
from rm.core.entities import App, Ask, Attempt, Container, Node
from rm.core.ledger import Ledger
from rm.core.ledger.decommission import Decommission, refusal
from rm.core.queues import QueueConfigError, resolve_queue
from rm.core.reservation.listing import ReservationInfo
from rm.core.reservation.requests import ReservationDefinition
from rm.core.run_history import datasets_from_tags
from rm.core.state_types import AllocatedContainer, AllocateResult, HeartbeatResult, NodeStatus, SubmitSpec

if TYPE_CHECKING:
    from am.policies.jockey.profile import StageRun
    from rm.core.job_profiles import StoredProfile
    from rm.service.job_profiles import ProfileService
    from rm.service.slo import Decided, SloService

log = logging.getLogger("shepherd.rm.ops")

DEADLINE_TAG = "shepherd.deadline"
MAX_PRICE_TAG = "shepherd.max-price"
QUOTE_TAG = "shepherd.quote"
DEFAULT_APP_TYPE = "YARN"  # YARN's ApplicationSubmissionContext default, for every door
APP_TYPE_LENGTH = 20  # YARN cuts longer application types to this
DEFAULT_AM_RESOURCE = SubmitSpec(app_id="").am_resource


class RMHandle(Protocol):
    """What the operations need of the ResourceManager (tests hand in a fake with a manual clock)."""

    @property
    def state(self) -> Ledger: ...

    def now(self) -> float: ...

    async def persist(self) -> None: ...

    def kick(self) -> None: ...

    @property
    def slo(self) -> SloService: ...

    @property
    def profiles(self) -> ProfileService: ...


@dataclass(frozen=True, slots=True)
class NewApplication:
    app_id: AppId
    max_allocation: Resources | None  # None: no node has registered yet


@dataclass(frozen=True, slots=True)
class Submitted:
    app: App
    created: bool  # False: the id was known; the submission was answered as accepted and changed nothing


@dataclass(frozen=True, slots=True)
class Killed:
    app: App
    changed: bool  # False: the app had ended already


@dataclass(frozen=True, slots=True)
class PlanSummary:
    queue: str
    capacity: Resources
    step_ms: int
    reservation_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Registered:
    app: App
    attempt: Attempt
    max_allocation: Resources | None
    inherited: tuple[AllocatedContainer, ...] = ()  # running containers a failed attempt passed on
    profile: StoredProfile | None = None  # the job's earlier runs (asked for with ``with_profile``)


def normalized(spec: SubmitSpec, now: float) -> SubmitSpec:
    """A submission as the RM keeps it, whichever door it came through (YARN's defaults and limits)."""
    tag_inputs, tag_outputs = datasets_from_tags(spec.tags)
    tags = tuple(dict.fromkeys(t.strip().lower() for t in spec.tags if t.strip()))
    app_type = (spec.app_type.strip() or DEFAULT_APP_TYPE)[:APP_TYPE_LENGTH]
    res = spec.am_resource
    amounts = res.to_dict()
    for name in (MEMORY, VCORES):
        if amounts.get(name, 0) == 0:
            amounts[name] = DEFAULT_AM_RESOURCE.get(name)
    return dataclasses.replace(
        spec, app_type=app_type, tags=tags, queue=spec.queue.strip() or "default",
        terms=terms_from_tags(spec.terms, spec.tags, now),
        am_resource=Resources(amounts) if amounts != res.to_dict() else res,
        inputs=(*spec.inputs, *tag_inputs), outputs=(*spec.outputs, *tag_outputs),
        # a native DAG job's AM (am.dag) resumes from its checkpoint and adopts what an earlier attempt ran
        keep_containers=spec.keep_containers or bool(spec.job_spec_json),
    )


def terms_from_tags(terms: AppTerms, tags: Iterable[str], now: float) -> AppTerms:
    """A deadline asked for in application tags (REST and Hadoop IPC submissions carry no field for it):
    ``shepherd.deadline=SECONDS_SINCE_EPOCH`` or ``=+SECONDS`` from now, ``shepherd.max-price=TOKENS`` (the
    earliest deadline priced within it), ``shepherd.quote=QUOTE_ID`` (buy that quote); fields win over tags."""
    found: dict[str, str] = {}
    for tag in tags:
        key, sep, value = tag.strip().partition("=")
        key = key.strip().lower()
        if sep and key in (DEADLINE_TAG, MAX_PRICE_TAG, QUOTE_TAG) and key not in found:
            found[key] = value.strip()
    changes: dict[str, Any] = {}
    if DEADLINE_TAG in found and terms.deadline is None:
        raw = found[DEADLINE_TAG]
        try:
            changes["deadline"] = now + float(raw[1:]) if raw.startswith("+") else float(raw)
        except ValueError:
            raise BadRequest(f"tag {DEADLINE_TAG}={raw!r}: not a number of seconds since the epoch "
                             "(or +SECONDS from now)") from None
    if MAX_PRICE_TAG in found and terms.max_price is None:
        try:
            changes["max_price"] = float(found[MAX_PRICE_TAG])
        except ValueError:
            raise BadRequest(f"tag {MAX_PRICE_TAG}={found[MAX_PRICE_TAG]!r}: not a number") from None
    if QUOTE_TAG in found and terms.quote_id is None:
        changes["quote_id"] = found[QUOTE_TAG]
    return dataclasses.replace(terms, **changes) if changes else terms


class Operations:
    """The operations over one ResourceManager. Holds nothing of its own: every door may build one."""

    def __init__(self, rm: RMHandle) -> None:
        self.rm = rm

    @property
    def state(self) -> Ledger:
        return self.rm.state

    async def _commit(self, *, wake: bool) -> None:
        await self.rm.persist()
        if wake:
            self.rm.kick()

    # ------------------------------------------------------------------ applications (clients)

    async def new_application(self) -> NewApplication:
        app_id = self.state.new_application(self.rm.now())
        await self._commit(wake=False)
        return NewApplication(app_id, self.state.max_allocation())

    async def submit(self, spec: SubmitSpec) -> Submitted:
        known = self.state.apps.get(AppId(spec.app_id))
        if known is not None:  # a retry after a lost answer: accepted again once the store has it
            await self._commit(wake=False)
            log.info("%s was submitted before; answered as accepted", known.app_id)
            return Submitted(known, created=False)
        now = self.rm.now()
        app = self.state.submit(normalized(spec, now), now)
        await self._commit(wake=True)
        log.info("accepted %s (%s, %s) into %s for %s", app.app_id, app.name, app.app_type, app.queue, app.user)
        return Submitted(app, created=True)

    def app(self, app_id: str) -> App:
        """One application (``BadRequest`` for a malformed id, ``ApplicationNotFound`` for an unknown one)."""
        return self.state.get_app(app_id)

    def containers(self, app_id: str) -> list[Container]:
        """The containers of an application the RM still holds, by id."""
        app = self.app(app_id)
        return sorted((c for c in self.state.containers.values() if c.app_id == app.app_id),
                      key=lambda c: c.container_id)

    def attempt(self, attempt_id: str) -> Attempt:
        """One attempt: ``ApplicationNotFound`` for an unknown app, ``ApplicationAttemptNotFound`` for an attempt
        its app never had (YARN's ClientRMService); ``BadRequest`` for a malformed id."""
        try:
            app_id = app_of_attempt(attempt_id)
        except ValueError as exc:
            raise BadRequest(str(exc)) from exc
        for att in self.app(app_id).attempts:
            if att.attempt_id == attempt_id:
                return att
        raise ApplicationAttemptNotFound(f"ApplicationAttempt with id '{attempt_id}' doesn't exist in RM.")

    def attempt_containers(self, attempt_id: str) -> list[Container]:
        """The containers an attempt owns that the RM still holds, by id (a container a failed attempt passed
        on belongs to the attempt that took it over, as in YARN)."""
        att = self.attempt(attempt_id)
        return sorted((c for c in self.state.containers.values() if c.attempt_id == att.attempt_id),
                      key=lambda c: c.container_id)

    def container(self, container_id: str) -> Container:
        """One container the RM holds, after its app and the attempt its id names (errors as ``attempt``, then
        ``ContainerNotFound``)."""
        try:
            attempt_id = parse_container_id(container_id).attempt_id
        except ValueError as exc:
            raise BadRequest(str(exc)) from exc
        att = self.attempt(attempt_id)
        c = self.state.containers.get(ContainerId(container_id))
        if c is None or c.app_id != att.app_id:
            raise ContainerNotFound(f"Container with id '{container_id}' doesn't exist in RM.")
        return c

    async def kill(self, app_id: str, diagnostics: str = "", user: str = "") -> Killed:
        app = self.app(app_id)
        if app.final:  # YARN: an app that has ended is answered as killed, once the store has its end
            await self._commit(wake=False)
            return Killed(app, changed=False)
        diag = diagnostics or (f"Application killed by user {user}." if user else "Application killed by user.")
        self.state.kill(app.app_id, diag, self.rm.now())
        await self._commit(wake=True)
        log.info("killed %s%s", app.app_id, f" for {user}" if user else "")
        return Killed(app, changed=True)

    async def move(self, app_id: str, queue: str) -> App:
        if not queue.strip():
            raise BadRequest("the target queue is empty")
        self.app(app_id)
        app = self.state.move(app_id, queue.strip(), self.rm.now())
        await self._commit(wake=True)
        return app

    async def set_priority(self, app_id: str, priority: int) -> App:
        self.app(app_id)
        app = self.state.set_priority(app_id, priority)
        await self._commit(wake=True)
        return app

    async def set_lifetime(self, app_id: str, expiry: float) -> App:
        """Set the LIFETIME timeout to ``expiry`` (seconds since the epoch); the liveness loop enforces it."""
        self.app(app_id)
        app = self.state.set_lifetime(app_id, expiry, self.rm.now())
        await self._commit(wake=False)
        return app

    def queue_path(self, name: str) -> QueuePath:
        """A queue (leaf or parent) by full path, by path below root, or by its leaf name when that is unique."""
        queues = self.state.queues
        name = name.strip() or "root"
        for path in (name, f"root.{name}"):
            if QueuePath(path) in queues:
                return QueuePath(path)
        matches = [p for p in queues if p.rsplit(".", 1)[-1] == name]
        if len(matches) == 1:
            return matches[0]
        raise BadRequest(f"Unknown queue: {name}")

    # ------------------------------------------------------------------ ApplicationMasters

    async def am_register(self, token: str, host: str, rpc_port: int, tracking_url: str, *,
                          with_profile: bool = False) -> Registered:
        """Register an attempt's AM; ``with_profile``: with the profile of the job's earlier runs (same name,
        queue and user), for a door that can carry it."""
        attempt = self.state.am_register(token, host, rpc_port, tracking_url, self.rm.now())
        await self._commit(wake=False)
        app = self.state.apps[attempt.app_id]
        profile = await self.rm.profiles.profile(app.name, str(app.queue), app.user) if with_profile else None
        if with_profile:
            app.profile_runs = () if profile is None else profile.runs
        return Registered(app, attempt, self.state.max_allocation(), tuple(self.state.inherited_containers(attempt)),
                          profile)

    async def am_allocate(self, token: str, response_id: int, asks: list[Ask], releases: Iterable[str],
                          progress: float, blacklist_add: Iterable[str] = (),
                          blacklist_remove: Iterable[str] = (), *, signals: AmSignals = NO_SIGNALS,
                          checkpoint: str | None = None) -> AllocateResult:
        releases = list(releases)
        result = self.state.am_allocate(token, response_id, asks, releases, progress, blacklist_add,
                                        blacklist_remove, self.rm.now(), signals=signals, checkpoint=checkpoint)
        await self._commit(wake=bool(asks or releases))
        return result

    async def am_finish(self, token: str, final_status: str, diagnostics: str, tracking_url: str, *,
                        stages: Iterable[StageRun] = ()) -> bool:
        """Unregister; ``stages``, the AM's report of this run per stage, is stored with the app's end as its
        job's history (a malformed one is a 400 and changes nothing), and the job's profile is built again."""
        report = job_profiles.check_report(list(stages))
        app = self.state.authenticate_am(token)[0] if report else None
        ended_before = app is None or app.final
        done = self.state.am_finish(token, final_status, diagnostics, tracking_url, self.rm.now())
        recorded = app is not None and not ended_before and app.final
        if recorded and app is not None:
            self.state.journal.mark(job_profiles.record_of(
                app.app_id, app.name, str(app.queue), app.user, app.finish_time or self.rm.now(),
                final_status == "SUCCEEDED", report))
        await self._commit(wake=True)
        if recorded and app is not None:
            self.rm.profiles.run_ended(app.name, str(app.queue), app.user)
        return done

    async def am_launch_failed(self, container_id: str, error: str) -> None:
        """The RM could not start an AM container: its attempt fails and the app may get another."""
        self.state.am_launch_failed(container_id, error, self.rm.now())
        await self._commit(wake=True)

    # ------------------------------------------------------------------ NodeManagers

    async def register_node(self, node_id: str, http_address: str, rack: str, capability: Resources,
                            statuses: Iterable[NodeStatus], *, ipc_port: int = 0, session_hash: str = "") -> Node:
        node = self.state.register_node(node_id, http_address, rack, capability, statuses, self.rm.now(),
                                        ipc_port=ipc_port, session_hash=session_hash)
        await self._commit(wake=True)
        log.info("node %s registered with %s", node.node_id, node.capability)
        skipped = sorted(set(capability.types()) - set(node.capability.types()))
        if skipped:
            log.warning("node %s offers resource types yarn.resource-types does not define; ignored: %s",
                        node.node_id, ", ".join(skipped))
        return node

    async def node_heartbeat(self, node_id: str, response_id: int, statuses: Iterable[NodeStatus],
                             healthy: bool = True, health_report: str = "") -> HeartbeatResult:
        result = self.state.node_heartbeat(node_id, response_id, statuses, healthy, health_report, self.rm.now())
        await self._commit(wake=True)
        return result

    async def unregister_node(self, node_id: str) -> None:
        self.state.unregister_node(node_id, self.rm.now())
        await self._commit(wake=True)
        log.info("node %s unregistered", node_id)

    def node_refusal(self, node_id: str) -> str:
        """Why a NodeManager may not register as ``node_id`` (it is decommissioned), or ""."""
        return refusal(self.state.nodes.get(NodeId(node_id)))

    # ------------------------------------------------------------------ administration (YARN's rmadmin)

    async def decommission(self, node_id: str, timeout_s: float | None) -> Decommission:
        """Decommission a node: gracefully within ``timeout_s`` seconds (DECOMMISSIONING: no new containers,
        the running ones finish), or at once (None). ``NotFound`` for a node the RM has never seen."""
        done = self.state.decommission(node_id, timeout_s, self.rm.now())
        await self._commit(wake=True)
        if done.changed:
            how = "at once" if timeout_s is None else f"gracefully within {timeout_s:g} s"
            log.info("node %s decommissioned %s: now %s", done.node.node_id, how, done.node.state)
        return done

    async def recommission(self, node_id: str) -> Decommission:
        """Take a node back into service (a decommissioned one may register again)."""
        done = self.state.recommission(node_id, self.rm.now())
        await self._commit(wake=True)
        if done.changed:
            log.info("node %s recommissioned: now %s", done.node.node_id, done.node.state)
        return done

    # ------------------------------------------------------------------ reservations (YARN's reservation API)

    async def new_reservation(self) -> str:
        rid = self.state.reservation_plan().new_reservation_id()
        await self._commit(wake=False)
        return rid

    async def submit_reservation(self, rid: str, queue: str, definition: ReservationDefinition, user: str) -> None:
        self.state.submit_reservation(rid, queue, definition, user=user or "dr.who", now=self.rm.now())
        await self._commit(wake=True)

    async def update_reservation(self, rid: str, definition: ReservationDefinition) -> None:
        self.state.update_reservation(rid, definition, now=self.rm.now())
        await self._commit(wake=True)

    async def delete_reservation(self, rid: str) -> None:
        self.state.reservation_plan().delete(rid)
        await self._commit(wake=True)

    def list_reservations(self, queue: str, rid: str | None, start_ms: int, end_ms: int,
                          include_allocations: bool) -> list[ReservationInfo]:
        return self.state.reservation_plan().list_reservations(queue, rid, start_ms, end_ms, include_allocations)

    def reservation_plans(self) -> list[PlanSummary]:
        """Each reservable queue's plan: its capacity, its step and the ids of its reservations."""
        system = self.state.reservation_plan()
        return [PlanSummary(str(q), book.timeline.capacity, book.timeline.step_ms,
                            tuple(sorted(str(r.reservation_id) for r in system.reservations.values() if r.queue == q)))
                for q, book in sorted(system.plans.items())]

    # ------------------------------------------------------------------ deadlines you can buy (MRM)

    def quote(self, *, queue: str, user: str, name: str, app_type: str = "SHEPHERD", job_spec_json: str = "",
              tags: Iterable[str] = ()) -> Quote:
        """A price–deadline quote for a job about to be submitted (nothing else changes)."""
        state = self.state
        try:
            path = resolve_queue(state.queues, queue.strip() or "default").path
        except QueueConfigError as exc:
            raise BadRequest(str(exc)) from None
        system = state.deadline_system()
        spec = SubmitSpec(app_id="", name=name, queue=str(path), user=user, app_type=app_type,
                          job_spec_json=job_spec_json, tags=tuple(t.strip().lower() for t in tags))
        job, declared = job_of(spec, path, system.config.unit)
        try:
            q = system.quote(job, declared, path, self.rm.now())
        except Refusal as r:
            raise (Conflict(r.reason) if r.conflict else BadRequest(r.reason)) from None
        log.info("quoted %s in %s: earliest finish %.1f s from now, %d points", name, path,
                 q.price.earliest - q.created, len(q.price.curve))
        return q

    def quote_of(self, quote_id: str) -> Quote:
        q = self.state.deadlines.quotes.get(quote_id)
        if q is None:
            raise NotFound(f"quote with id: {quote_id} not found")
        return q

    async def change_deadline(self, app_id: str, deadline: float) -> App:
        """A new deadline (seconds since the epoch) for an unfinished app, admitted by its queue's deadline
        book as a submission's would be; a refusal (409, with the earliest feasible finish) changes nothing."""
        self.app(app_id)
        app = self.state.change_deadline(app_id, deadline, self.rm.now())
        await self._commit(wake=True)
        log.info("deadline of %s changed to %.3f", app.app_id, deadline)
        return app

    def deadline_apps(self, queue: str | None = None) -> list[App]:
        """Apps that bought a deadline, earliest deadline first (running ones, then those that ended)."""
        apps = [a for a in self.state.apps.values() if a.terms.claim is not None and a.terms.deadline is not None
                and (not queue or a.queue == queue or a.queue.split(".")[-1] == queue)]
        return sorted(apps, key=lambda a: (a.final, a.terms.deadline or 0.0, a.app_id))

    # ------------------------------------------------------------------ SLO proposals (Morpheus)

    async def accept_slo(self, job: str, overrides: Mapping[str, Any], user: str) -> tuple[str, Decided]:
        """Sign off a job's SLO proposal (with overrides): it becomes a periodic reservation."""
        rid, decided = await self.rm.slo.accept(job, overrides, user)
        await self._commit(wake=True)
        log.info("SLO of job %s accepted as periodic reservation %s", job, rid)
        return rid, decided

    async def reject_slo(self, job: str, user: str) -> Decided:
        """Reject a job's SLO proposal: not proposed again until a new run of the job ends."""
        decided = await self.rm.slo.reject(job, user)
        await self._commit(wake=False)
        log.info("SLO of job %s rejected", job)
        return decided


__all__ = ["Killed", "NewApplication", "Operations", "RMHandle", "Registered",
           "Submitted", "normalized"]
