"""The DAG ApplicationMaster: ``python -m am.dag`` runs the job in ``SHEPHERD_JOB_JSON``.

It registers with the RM, then heartbeats (allocate) every ``--interval`` seconds, or at once
after a task finished: it sends the asks its policy decides, hands each allocated container to a
runnable task of the container's stage, starts the task on the container's NodeManager and reads
task outcomes from the completed container statuses. A task that fails is retried up to its
stage's ``max_attempts``; one lost with its node (-100) or preempted (-102) is asked for again
without counting an attempt. At the end it unregisters with SUCCEEDED, or FAILED naming the task
that failed. Its exit code is 0 once it has unregistered, 1 when it could not talk to the RM.

Everything it does is logged to stdout, which is the AM container's stdout log.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import socket
import sys
import time
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence

from am.client import AMClientError, AMEnvironment, AMEnvironmentError, AMRMClient, NMClient
from am.dag_state import DagState
from am.jobspec import Job, JobSpecError, Stage, parse_job
from am.policies import AskDecision, AskPolicy, AskTable, make_ask_policy, stage_index_of
from am.policies.api import FollowsDeadline, FollowsGrant, TakesProfile
from am.policies.jockey.profile import ProfileError, stage_runs_from_dag
from am.policies.jockey_policy import TASK_OVERHEAD_S
from am.profile_wire import profile_from_pb, report_to_pb
from common.exits import EXIT_INVALID
from common.resources import Resources
from proto import shepherd_pb2 as pb

DEFAULT_INTERVAL_S = 0.5
CHECKPOINT_LIMIT = 256 * 1024  # the most the RM keeps of an AM's progress (rm.core.ledger.am)
DEFAULT_ASK_POLICY = "carbyne"  # when neither the job, the flag nor the RM names one
PASS_THROUGH_ENV = ("SHEPHERD_PYTHON", "SHEPHERD_JOB_DIR")

log = logging.getLogger("am.dag")


# ---------------------------------------------------------------------- task launch helpers


def format_command(template: str, *, job: str, stage: str, task: int, tasks: int, attempt: int) -> str:
    """Fill the ``{task}``, ``{stage}``, ``{tasks}``, ``{attempt}`` and ``{job}`` placeholders.

    Plain replacement of exactly these tokens: other braces (shell ``${VAR}``, JSON) stay as written.
    """
    values = {"{task}": str(task), "{stage}": stage, "{tasks}": str(tasks), "{attempt}": str(attempt), "{job}": job}
    out = template
    for token, value in values.items():
        out = out.replace(token, value)
    return out


def task_environment(
    job: Job, stage: Stage, task: int, attempt: int, am_environ: Mapping[str, str]
) -> dict[str, str]:
    """A task's environment: pass-through from the AM, then the job's ``env``, then the task's ids."""
    env = {name: am_environ[name] for name in PASS_THROUGH_ENV if am_environ.get(name)}
    env.update(job.env)
    env.update(
        SHEPHERD_JOB_ID=job.id,
        SHEPHERD_STAGE=stage.name,
        SHEPHERD_STAGE_TASKS=str(stage.tasks),
        SHEPHERD_TASK_INDEX=str(task),
        SHEPHERD_TASK_ATTEMPT=str(attempt),
    )
    return env


def resources_to_pb(r: Resources) -> pb.Resource:
    return pb.Resource(values=r.to_dict())


def resources_from_pb(r: pb.Resource) -> Resources:
    return Resources(dict(r.values))


def ask_to_pb(d: AskDecision) -> pb.ResourceAsk:
    return pb.ResourceAsk(
        allocation_request_id=d.allocation_request_id,
        priority=d.priority,
        capability=resources_to_pb(d.capability),
        num_containers=d.num_containers,
        relax_locality=True,
        ask_type=pb.ALTRUISTIC if d.ask_type == "ALTRUISTIC" else pb.DEFAULT,
        remaining_work_s=d.remaining_work_s,
        stage=d.stage,
    )


def _status_duration_s(status: pb.ContainerStatus) -> float | None:
    if status.start_time_ms > 0 and status.finish_time_ms >= status.start_time_ms:
        return (status.finish_time_ms - status.start_time_ms) / 1000.0
    return None


# ---------------------------------------------------------------------- the AM


class DagAM:
    """One attempt of the DAG ApplicationMaster."""

    def __init__(
        self,
        job: Job,
        amrm: AMRMClient,
        nm: NMClient,
        *,
        policy: AskPolicy,
        am_environ: Mapping[str, str],
        host: str,
        interval_s: float = DEFAULT_INTERVAL_S,
        clock: Callable[[], float] = time.monotonic,
        seed: int | None = None,
    ) -> None:
        self.job = job
        self.dag = DagState(job, shuffle_seed=seed)  # first stages in a drawn order: pilots are a random sample
        self.amrm = amrm
        self.nm = nm
        self.policy = policy
        self.am_environ = am_environ
        self.host = host
        self.interval_s = interval_s
        self.clock = clock
        self.table = AskTable()
        self.fair_share = Resources.ZERO
        self._releases: list[str] = []
        self._wake = asyncio.Event()
        self._launches: set[asyncio.Task[None]] = set()
        self._checkpointed = ""  # the last progress checkpoint the RM keeps for later attempts
        self._saved = asyncio.Event()  # set once the RM answered the heartbeat that carries the next checkpoint

    async def run(self) -> int:
        try:
            reg = await self.amrm.register(self.host, 0, "")
        except AMClientError as exc:
            log.error("cannot register with the RM at %s: %s", self.amrm.address, exc)
            return 1
        log.info(
            "registered %s (attempt %s) in queue %s: job %r, %d stages, %d tasks, policy %s",
            reg.application_id, reg.attempt_id, reg.queue, self.job.id, len(self.job.stages),
            self.job.total_tasks, self.policy.name,
        )
        self._resume(reg)
        self._take_profile(reg)
        missing = [s.name for s in self.job.stages if s.command is None]
        if missing:
            return await self._finish(pb.FAILED, f"stage(s) {', '.join(missing)} have no command to run")
        try:
            shutdown = await self._loop()
        except AMClientError as exc:
            if exc.code == "INVALID_ARGUMENT":  # the RM refused what the job asks for: it can never run
                log.error("the RM refused this job's asks: %s", exc.message)
                await self._release_everything()
                return await self._finish(pb.FAILED, f"the ResourceManager refused the job's asks: {exc.message}")
            log.error("lost contact with the RM: %s", exc)
            return 1
        if shutdown:
            log.warning("the RM told this attempt to shut down; exiting without unregistering")
            return 0
        await self._drain_launches()
        failed = self.dag.failed_task
        if failed is None:
            return await self._finish(pb.SUCCEEDED, f"all {self.dag.total_tasks} tasks succeeded")
        await self._release_everything()
        diagnostics = (
            f"stage {failed.stage!r} task {failed.index} failed {failed.failures} time(s); "
            f"last exit status {failed.last_exit_status}"
        )
        if failed.last_diagnostics:
            diagnostics += f": {failed.last_diagnostics[:500]}"
        return await self._finish(pb.FAILED, diagnostics)

    async def _loop(self) -> bool:
        """Heartbeat until the job is done; True when the RM said AM_SHUTDOWN."""
        first = True
        while not self.dag.finished:
            response = await self._heartbeat()
            if response.am_command == pb.AM_SHUTDOWN:
                return True
            if response.HasField("fair_share"):
                self.fair_share = resources_from_pb(response.fair_share)
            if response.HasField("deadline_in_s") and isinstance(self.policy, FollowsDeadline):
                self.policy.set_deadline(self.clock() + response.deadline_in_s)  # the RM's, in this AM's clock
            if isinstance(self.policy, FollowsGrant):
                self.policy.set_granted(
                    resources_from_pb(response.granted_guarantee) if response.HasField("granted_guarantee") else None,
                    resources_from_pb(response.guarantee_ceiling) if response.HasField("guarantee_ceiling") else None)
            self._saved.set()  # the RM holds the checkpoint this heartbeat carried: the launches it covers may go
            self._saved = asyncio.Event()
            hurry = self._on_completed(response.completed_container_statuses)
            if first:  # what ended before this attempt has been told by now: held tasks not heard of run again
                first = False
                if self.dag.settle(self.clock()):
                    hurry = True
            hurry |= self._on_allocated(response.allocated_containers)
            if self.dag.finished or hurry:
                continue
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout=self.interval_s)
            self._wake.clear()
        return False

    async def _heartbeat(self) -> pb.AllocateResponse:
        decisions = self.policy.asks(self.dag, self.fair_share, self.clock())
        changes = self.table.update(decisions)
        for d in changes:
            log.info("ask %s %s: %d x %s (priority %d)", d.stage, d.ask_type, d.num_containers, d.capability,
                     d.priority)
        releases, self._releases = self._releases, []
        checkpoint = json.dumps(self.dag.checkpoint(), sort_keys=True, separators=(",", ":"))
        if checkpoint == self._checkpointed or len(checkpoint) > CHECKPOINT_LIMIT:
            checkpoint_sent = None  # unchanged (or too large to keep: a later attempt starts over)
        else:
            checkpoint_sent = checkpoint
        response = await self.amrm.allocate([ask_to_pb(d) for d in changes], releases, self.dag.progress(),
                                            signals=self.policy.signals(), checkpoint=checkpoint_sent)
        if checkpoint_sent is not None:
            self._checkpointed = checkpoint_sent
        return response

    def _resume(self, reg: pb.RegisterApplicationMasterResponse) -> None:
        """Go on from where earlier attempts got to: their finished tasks are not run again, and the running
        containers the RM passed on (keep-containers-across-attempts) keep their tasks."""
        inherited = {c.container_id for c in reg.containers_from_previous_attempts}
        if reg.checkpoint:
            try:
                saved = json.loads(reg.checkpoint)
            except ValueError:
                saved = {}
            carried, adopted = self.dag.resume(saved if isinstance(saved, dict) else {}, inherited, self.clock())
            log.info("an earlier attempt got this far: %d task(s) done, %d still running in the %d container(s) "
                     "passed on", carried, adopted, len(inherited))
        for c in reg.containers_from_previous_attempts:
            if self.dag.task_for_container(c.container_id) is None:
                log.info("releasing %s left by a previous attempt: no task of this one runs in it", c.container_id)
                self._releases.append(c.container_id)

    def _take_profile(self, reg: pb.RegisterApplicationMasterResponse) -> None:
        """The profile of the job's earlier runs the RM sent, for a policy that models the job from one."""
        if not reg.HasField("profile") or not isinstance(self.policy, TakesProfile):
            return
        try:
            profile = profile_from_pb(reg.profile, unmeasured_init_s=TASK_OVERHEAD_S)
        except (ProfileError, ValueError) as exc:
            log.warning("ignoring the RM's profile of this job: %s", exc)
            return
        self.policy.set_profile(profile)
        log.info("modelling the job from the profile of %d earlier run(s): %s", len(reg.profile.runs),
                 ", ".join(reg.profile.runs))

    def _on_completed(self, statuses: Iterable[pb.ContainerStatus]) -> bool:
        """Apply finished containers; True when that may have made new tasks runnable."""
        changed = False
        for status in statuses:
            done = self.dag.complete(
                status.container_id, status.exit_status, self.clock(), status.diagnostics,
                measured_s=_status_duration_s(status),
            )
            if done.outcome == "unknown":
                continue
            changed = True
            where = f"{done.stage}/{done.task} ({status.container_id})"
            why = f" ({status.diagnostics.strip()[:300]})" if status.diagnostics.strip() else ""
            if done.outcome == "succeeded":
                log.info("task %s succeeded in %.2fs; progress %.0f%%", where, done.duration_s,
                         100 * self.dag.progress())
                for stage in done.newly_runnable:
                    log.info("stage %s is runnable", stage)
            elif done.outcome == "requeued":
                log.warning("task %s lost its container, exit %d%s; asking again", where, done.exit_status, why)
            elif done.outcome == "retry":
                log.warning("task %s failed, exit %d%s; retrying", where, done.exit_status, why)
            else:
                log.error("task %s failed, exit %d%s; no attempts left", where, done.exit_status, why)
        return changed

    def _on_allocated(self, containers: Sequence[pb.Container]) -> bool:
        """Assign containers to runnable tasks and launch them once the RM holds the checkpoint that says so
        (the next heartbeat, sent at once); True when a task was assigned."""
        assigned = False
        for container in containers:
            self.table.delivered(container.allocation_request_id)
            stage = self._stage_of(container.allocation_request_id)
            runnable = self.dag.runnable(stage.name) if stage is not None and not self.dag.finished else []
            if stage is None or not runnable:
                log.info("releasing %s (request %d): no task needs it", container.container_id,
                         container.allocation_request_id)
                self._releases.append(container.container_id)
                continue
            task = runnable[0]
            attempt = self.dag.start(stage.name, task, container.container_id, self.clock())
            launch = self._launch_context(stage, task, attempt)
            job = asyncio.create_task(self._launch(container, stage.name, task, launch, self._saved))
            self._launches.add(job)
            job.add_done_callback(self._launches.discard)
            assigned = True
        return assigned

    def _stage_of(self, allocation_request_id: int) -> Stage | None:
        index = stage_index_of(allocation_request_id)
        if index is None or not 0 <= index < len(self.job.stages):
            return None
        return self.job.stages[index]

    def _launch_context(self, stage: Stage, task: int, attempt: int) -> pb.ContainerLaunchContext:
        assert stage.command is not None
        command = format_command(
            stage.command, job=self.job.id, stage=stage.name, task=task, tasks=stage.tasks, attempt=attempt
        )
        env = task_environment(self.job, stage, task, attempt, self.am_environ)
        return pb.ContainerLaunchContext(commands=[command], environment=env)

    async def _launch(
        self, container: pb.Container, stage: str, task: int, launch: pb.ContainerLaunchContext,
        saved: asyncio.Event | None = None,
    ) -> None:
        node = f"{container.node_id.host}:{container.node_id.port}"
        if saved is not None:  # a later attempt learns of the task from the checkpoint before it starts
            await saved.wait()
        try:
            await self.nm.start_container(container, launch)
        except AMClientError as exc:
            log.error("could not start %s/%d on %s: %s", stage, task, node, exc)
            self.dag.complete(container.container_id, EXIT_INVALID, self.clock(), str(exc))
            self._releases.append(container.container_id)
            self._wake.set()
            return
        log.info("started %s/%d in %s on %s: %s", stage, task, container.container_id, node,
                 " ".join(launch.commands))

    async def _drain_launches(self) -> None:
        self._saved.set()  # no heartbeat follows: launches still waiting for one go now
        if self._launches:
            await asyncio.gather(*self._launches, return_exceptions=True)

    async def _release_everything(self) -> None:
        """The job failed: withdraw every ask and give back the containers still running."""
        running = [t.container_id for t in self.dag.running() if t.container_id]
        withdrawals = self.table.update([])
        releases = self._releases + running
        self._releases = []
        if not releases and not withdrawals:
            return
        try:
            await self.amrm.allocate([ask_to_pb(d) for d in withdrawals], releases, self.dag.progress())
        except AMClientError as exc:
            log.warning("could not release containers before finishing: %s", exc)

    async def _finish(self, status: pb.FinalStatus, diagnostics: str) -> int:
        name = pb.FinalStatus.Name(status)
        log.info("finishing with %s: %s", name, diagnostics)
        try:
            done = await self.amrm.finish(status, diagnostics, stages=report_to_pb(stage_runs_from_dag(self.dag)))
        except AMClientError as exc:
            log.error("could not unregister from the RM: %s", exc)
            return 1
        if not done:
            log.error("the RM did not confirm the unregistration")
            return 1
        return 0


# ---------------------------------------------------------------------- entry points


def ask_policy_name(job: Job, flag: str | None, environ: Mapping[str, str]) -> str:
    """The job's own ask policy, else the ``--policy`` flag's, else the RM's (``SHEPHERD_AM_POLICY``: its
    scheduler's), else ``DEFAULT_ASK_POLICY``."""
    return job.am_policy or flag or environ.get("SHEPHERD_AM_POLICY") or DEFAULT_ASK_POLICY


async def run_am(
    environ: Mapping[str, str],
    *,
    interval_s: float = DEFAULT_INTERVAL_S,
    policy: str | None = None,
    retry_s: float = 60.0,
) -> int:
    """Run one AM attempt with the given environment (``os.environ`` in a container).

    The ask policy is the job's own (``am_policy``), else ``policy`` (the ``--policy`` flag), else the one
    the RM puts in ``SHEPHERD_AM_POLICY`` (its scheduler's: ``carbyne`` under carbyne, carbyne-pack and
    morpheus, ``greedy`` under drf, fifo and tetris), else ``carbyne``.
    """
    try:
        env = AMEnvironment.from_env(environ)
    except AMEnvironmentError as exc:
        log.error("cannot start: %s", exc)
        return 1
    host = env.nm_host or socket.gethostname()
    amrm = AMRMClient(env.rm_address, env.amrm_token, retry_s=retry_s)
    nm = NMClient(amrm.nm_tokens)
    try:
        try:
            job = parse_job(_json_object(env.job_json), where="SHEPHERD_JOB_JSON")
            seed = zlib.crc32((environ.get("APPLICATION_ID") or job.id).encode())
            ask_policy = make_ask_policy(ask_policy_name(job, policy, environ), p_altruism=job.altruism, seed=seed,
                                         floor=job.altruism_floor)
        except ValueError as exc:  # JobSpecError, bad JSON, unknown policy
            return await _fail_at_start(amrm, host, f"invalid job: {exc}")
        am = DagAM(job, amrm, nm, policy=ask_policy, am_environ=environ, host=host, interval_s=interval_s,
                   seed=seed)
        return await am.run()
    finally:
        await nm.close()
        await amrm.close()


def _json_object(text: str) -> dict[str, object]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise JobSpecError(f"SHEPHERD_JOB_JSON is not valid JSON: {exc.msg}") from None
    if not isinstance(data, dict):
        raise JobSpecError("SHEPHERD_JOB_JSON is not a JSON object")
    return data


async def _fail_at_start(amrm: AMRMClient, host: str, diagnostics: str) -> int:
    """The AM cannot run this job: say why through the RM, so the user sees it in the app report."""
    log.error("%s", diagnostics)
    try:
        await amrm.register(host, 0, "")
        await amrm.finish(pb.FAILED, diagnostics)
    except AMClientError as exc:
        log.error("could not report the failure to the RM: %s", exc)
        return 1
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m am.dag", description="Run a DAG job as its AM.")
    parser.add_argument("--interval", type=float, default=DEFAULT_INTERVAL_S, help="seconds between heartbeats")
    parser.add_argument("--policy", default=None,
                        help="ask policy when the job names none: carbyne or greedy (default: the one the RM "
                             "names in SHEPHERD_AM_POLICY, its scheduler's, else carbyne)")
    args = parser.parse_args(argv)
    logging.basicConfig(
        stream=sys.stdout, level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    return asyncio.run(run_am(os.environ, interval_s=args.interval, policy=args.policy))


if __name__ == "__main__":
    sys.exit(main())
