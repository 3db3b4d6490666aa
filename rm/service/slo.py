"""SLO inference in the live RM (Morpheus §4–5): proposals from the run history in the state store, and the
sign-off that turns one into a periodic reservation.

History is read from the store on the store's thread; the skyline LP (PuLP/CBC) runs in a separate process,
so neither blocks the event loop. A job's proposal is cached until its runs or the accesses to its datasets
change. Decisions (accepted / rejected) live in ``Ledger.slo_decisions`` and the store.
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
from collections import defaultdict
from collections.abc import Mapping
from concurrent.futures import Executor, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from common.errors import Conflict, NotFound
from rm.core import run_history
from rm.core.records import DatasetAccessRecord, JobRunRecord, SloDecisionRecord
from rm.core.reservation import slo
from rm.core.reservation.inference import InferenceConfig, SloProposal, infer_period, propose
from rm.core.reservation.requests import reservation_id

if TYPE_CHECKING:
    from rm.service.server import ResourceManager

log = logging.getLogger("shepherd.rm.slo")
T = TypeVar("T")

HISTORY_RUNS = 30  # the newest runs of a job that inference looks at
HISTORY_KEPT = 200  # runs per job kept in the store (older ones are pruned at start)


@dataclass(frozen=True, slots=True)
class Outcome:
    """Inference for one job from one state of its history: a proposal, or why there is none."""

    job: str
    key: tuple[Any, ...]  # the history it was computed from (its runs, and accesses to its datasets)
    proposal: SloProposal | None
    reason: str
    basis: str  # the newest successful run


@dataclass(frozen=True, slots=True)
class Decided:
    """A proposal with its effective status, as served."""

    proposal: SloProposal
    status: slo.Status
    decision: SloDecisionRecord | None
    basis: str


def _history(runs: list[JobRunRecord]) -> tuple[list[str], set[str]]:
    return [r.app_id for r in runs], {p for r in runs for p in (*r.inputs, *r.outputs)}


class SloService:
    def __init__(self, rm: ResourceManager) -> None:
        self.rm = rm
        step = rm.state.reservations.config.step_s
        self.config = InferenceConfig(step_s=step)
        self._cache: dict[str, Outcome] = {}
        self._lock = asyncio.Lock()
        self._pool: ProcessPoolExecutor | None = None

    # ------------------------------------------------------------------ plumbing

    async def _in_store(self, fn: Any, *args: Any) -> Any:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.rm.store_executor, fn, *args)

    def _executor(self) -> Executor:
        if self._pool is None:  # spawn: forking a process that runs gRPC threads is not safe
            self._pool = ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"))
        return self._pool

    async def _solve(self, job: str, runs: list[JobRunRecord], accesses: list[DatasetAccessRecord]
                     ) -> SloProposal | None:
        loop = asyncio.get_running_loop()
        args = (job, [run_history.to_run(r) for r in runs], [run_history.to_access(a) for a in accesses],
                self.config)
        try:
            return await loop.run_in_executor(self._executor(), propose, *args)
        except BrokenProcessPool:
            log.warning("the inference process died; starting another")
            self._pool = None
            return await loop.run_in_executor(self._executor(), propose, *args)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None

    def prune(self) -> int:
        """Drop each job's runs beyond the newest HISTORY_KEPT (called on the store's thread at start)."""
        return self.rm.store.prune_job_runs(HISTORY_KEPT)

    # ------------------------------------------------------------------ inference

    async def _index(self) -> dict[str, list[tuple[str, float, bool]]]:
        rows = await self._in_store(self.rm.store.job_run_index)
        out: dict[str, list[tuple[str, float, bool]]] = defaultdict(list)
        for job, app_id, submit, ok in rows:
            out[job].append((app_id, submit, ok))
        return out

    def _step_runs(self, runs: list[JobRunRecord]) -> list[JobRunRecord]:
        return [r for r in runs if r.step_s == self.config.step_s]  # skylines in another step do not mix

    async def outcome(self, job: str) -> Outcome:
        """Inference for ``job`` from its history as stored now (cached while that history is unchanged)."""
        async with self._lock:
            store = self.rm.store

            def read_key() -> tuple[list[JobRunRecord], tuple[Any, ...]]:
                runs = self._step_runs(store.job_runs(job, limit=HISTORY_RUNS))
                ids, paths = _history(runs)
                return runs, (tuple(ids), store.dataset_access_stamp(paths))

            runs, key = await self._in_store(read_key)
            cached = self._cache.get(job)
            if cached is not None and cached.key == key:
                return cached
            good = [r for r in runs if r.succeeded]
            basis = good[-1].app_id if good else ""
            proposal: SloProposal | None = None
            reason = ""
            period, why = infer_period([r.submit_time for r in good], self.config)
            if len(good) < self.config.min_runs:
                reason = (f"job {job} has {len(good)} successful run(s); SLO inference needs at least "
                          f"{self.config.min_runs}")
            elif period is None:
                reason = why
            else:
                accesses = await self._in_store(store.dataset_accesses, _history(runs)[1])
                try:
                    proposal = await self._solve(job, runs, accesses)
                except (RuntimeError, ValueError, OSError) as exc:
                    reason = f"the skyline of job {job} could not be fitted: {exc}"
                    log.warning("%s", reason)
                if proposal is None and not reason:
                    reason = f"the runs of job {job} show no period"
            out = Outcome(job, key, proposal, reason, basis)
            self._cache[job] = out
            return out

    def decided(self, proposal: SloProposal, basis: str) -> Decided:
        """The proposal with its status from the job's decision, if any."""
        decision = self.rm.state.slo_decisions.get(proposal.job)
        active = decision is not None and decision.reservation_id in self.rm.state.reservations.reservations
        status = slo.status_of(decision, basis=basis, reservation_active=active)
        return Decided(proposal, status, decision, basis)

    async def proposals(self) -> list[Decided]:
        """Every recurring job with enough successful runs and a period, by job name."""
        index = await self._index()
        out: list[Decided] = []
        for job in sorted(index):
            if sum(1 for _, _, ok in index[job] if ok) < self.config.min_runs:
                continue
            result = await self.outcome(job)
            if result.proposal is not None:
                out.append(self.decided(result.proposal, result.basis))
        return out

    async def proposal(self, job: str) -> Decided:
        """One job's proposal; 404 for a job without runs, 409 when its runs allow none (with the reason)."""
        if not await self._in_store(lambda: self.rm.store.job_runs(job, limit=1)):
            raise NotFound(f"no runs of a job named {job!r} are recorded")
        result = await self.outcome(job)
        if result.proposal is None:
            raise Conflict(f"no SLO can be proposed for job {job}: {result.reason}")
        return self.decided(result.proposal, result.basis)

    def render(self, d: Decided) -> dict[str, Any]:
        return slo.render(d.proposal, status=d.status, decision=d.decision, basis=d.basis, now=self.rm.now())

    # ------------------------------------------------------------------ decisions

    def _check_open(self, d: Decided) -> None:
        if d.status == "accepted" and d.decision is not None:
            raise Conflict(f"the SLO of job {d.proposal.job} is already accepted as reservation "
                           f"{d.decision.reservation_id}; delete that reservation to decide again")

    async def accept(self, job: str, body: Mapping[str, Any], user: str) -> tuple[str, Decided]:
        """Sign off (with overrides): the periodic reservation is placed and the decision recorded in the
        state; the caller (``Operations.accept_slo``) persists both before it answers."""
        overrides = slo.parse_overrides(body, step_s=self.config.step_s)
        d = await self.proposal(job)
        self._check_open(d)
        if not d.proposal.actionable and not overrides.any():
            raise Conflict(f"the SLO proposal of job {job} is not actionable ({'; '.join(d.proposal.reasons)}); "
                           "accept it with overrides (deadline, earliestStart, period, queue, skyline) instead")
        signed = slo.apply_overrides(d.proposal, overrides)
        now = self.rm.now()
        definition = signed.to_definition(now=now)
        state = self.rm.state
        system = state.reservation_plan()
        rid = reservation_id(system.cluster_ts, system.next_seq)  # taken only if the submit succeeds
        state.submit_reservation(rid, signed.queue, definition, user=user or signed.user or "dr.who", now=now)
        state.decide_slo(SloDecisionRecord(
            job=job, status="accepted", reservation_id=rid, based_on=d.basis, runs=d.proposal.runs,
            decided_at=now, user=user, overrides=overrides.to_json(),
        ))
        return rid, self.decided(d.proposal, d.basis)

    async def reject(self, job: str, user: str) -> Decided:
        """Record a rejection (the caller persists it): the job is not proposed again until a new successful
        run ends."""
        d = await self.proposal(job)
        self._check_open(d)
        now = self.rm.now()
        self.rm.state.decide_slo(SloDecisionRecord(
            job=job, status="rejected", based_on=d.basis, runs=d.proposal.runs, decided_at=now, user=user,
        ))
        return self.decided(d.proposal, d.basis)
