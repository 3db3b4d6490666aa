"""The synchronous client: gRPC for submissions and reads (``rm.client.RMClient``), REST for what only REST
answers (plan, explain), the NodeManagers' web ports for container logs. ``shepherd`` itself runs on it."""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Self
from urllib.parse import quote

import httpx

from common.user_config import resolve_rest, resolve_rm
from rm.client import ClientError, RMClient
from rm.commands.rest import RestClient
from rm.commands.target import hadoop_rest
from rm.sdk.follow import OutageCallback, ProgressCallback, RideThrough, Watch, last_lines, log_names, log_url
from rm.sdk.jobs import DEFAULT_DATA_DIR, JobInput, job_user, plan_body, read_job, submission_context
from rm.sdk.models import AppReport, ContainerReport, Explanation, JobPlan, LogFile, NodeReport

PLAN_TIMEOUT_S = 120.0  # a dry run simulates the cluster until the job ends: it may take a while
LOG_TIMEOUT_S = 10.0
POLL_S = 0.5
KILLED_BY_USER = "Application killed by user."
PLAN = "/ws/v1/shepherd/plan"


def explain_path(app_id: str) -> str:
    return f"/ws/v1/shepherd/apps/{quote(app_id, safe='')}/explain"


def plan_path(user: str) -> str:
    return f"{PLAN}?user.name={quote(user)}"


def rm_address(rm: str | None, rest: str | None, cluster: str | None) -> str:
    """The gRPC address (or pair) a client of these arguments talks to, found as ``shepherd`` finds it."""
    return resolve_rm(rm=rm, rest=rest, cluster=cluster, env=os.environ).address


def rest_url(rm: str | None, rest: str | None, cluster: str | None) -> str:
    """The REST URL a client of these arguments talks to, found as ``shepherd`` finds it."""
    return resolve_rest(rm=rm, rest=rest, cluster=cluster, env=os.environ, hadoop=hadoop_rest).address


def read_log(node_http_address: str, container_id: str, name: str, *,
             http: httpx.Client | None = None) -> str | None:
    """One container log file as its NodeManager serves it; None when the node does not answer or has no such
    file (yet)."""
    url = log_url(node_http_address, container_id, name)
    try:
        resp = http.get(url) if http is not None else httpx.get(url, timeout=LOG_TIMEOUT_S)
    except httpx.HTTPError:
        return None
    return resp.text if resp.status_code == 200 else None


class Client:
    """A ResourceManager's client. Which one, first hit wins: ``rm`` (gRPC ``host:port``, or an active/standby
    pair comma-separated) and ``rest`` (its REST URL); the named ``cluster`` of the user config file (both);
    ``$SHEPHERD_RM`` and ``$SHEPHERD_REST``; the config file's current cluster; ``127.0.0.1:7030`` and
    ``http://127.0.0.1:8088`` — as the ``shepherd`` command finds them. The client secret likewise:
    ``secret``, ``$SHEPHERD_CLIENT_SECRET``, the credentials file of the named or local cluster. A refusal or
    an RM that cannot be reached raises ``ClientError``. Use it as a context manager, or ``close()`` it.
    ``rpc`` is the gRPC client underneath (``rm.client.RMClient``: protobuf reports, metrics, queues)."""

    def __init__(self, rm: str | None = None, rest: str | None = None, *, cluster: str | None = None,
                 secret: str | None = None, timeout: float = 15.0) -> None:
        self.rpc = RMClient(rm_address(rm, rest, cluster), secret, timeout)
        self.timeout = timeout
        self._given = (rm, rest, cluster)
        self._secret = secret
        self._rest_url: str | None = None
        self._web: RestClient | None = None
        self._nm: httpx.Client | None = None

    @property
    def address(self) -> str:
        """The gRPC address of the RM the calls go to (the active one of a pair, once one answered)."""
        return self.rpc.address

    @property
    def rest_url(self) -> str:
        """The REST URL of the RM (found on first use)."""
        if self._rest_url is None:
            self._rest_url = rest_url(*self._given)
        return self._rest_url

    def _rest(self, timeout: float | None = None) -> RestClient:
        """The REST client; with a ``timeout``, a new one the caller closes."""
        if timeout is not None:
            return RestClient(self.rest_url, self._secret, timeout)
        if self._web is None:
            self._web = RestClient(self.rest_url, self._secret, self.timeout)
        return self._web

    def close(self) -> None:
        self.rpc.close()
        if self._web is not None:
            self._web.__exit__()
        if self._nm is not None:
            self._nm.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------------------------ jobs

    def submit(self, job: JobInput, *, queue: str | None = None, env: Mapping[str, str] | None = None,
               data_dir: str | Path = DEFAULT_DATA_DIR, job_dir: str | Path | None = None, reservation: str = "",
               deadline: float = 0.0, max_price: float = 0.0, quote: str = "",
               plan_token: str = "") -> str:
        """Submit a DAG job to run under shepherd's DAG ApplicationMaster; the new application's id.

        ``job``: a job file (YAML or JSON), a ``Job`` or a mapping of its fields (``JobSpecError`` when it is not
        valid). ``queue`` overrides the job's; ``env`` is added to every task's environment, whose
        ``OUTPUT_DIR`` is ``<data_dir>/output/<app id>`` unless set and whose ``SHEPHERD_JOB_DIR`` is
        ``job_dir`` (default: the job file's directory, else the current one). ``deadline`` (seconds since the
        epoch), ``max_price`` or ``quote`` buy a deadline; ``reservation`` runs it inside that reservation;
        ``plan_token`` (``JobPlan.token``) has it accepted only while that dry run's plan holds (the same job on
        the same apps, nodes and queues), else refused (``ClientError``: INVALID_ARGUMENT for another job,
        FAILED_PRECONDITION when the cluster changed)."""
        spec, directory = read_job(job)
        app_id = self.rpc.new_application()
        self.rpc.submit(submission_context(
            spec, app_id, job_dir=Path(job_dir or directory or Path.cwd()).resolve(), data_dir=Path(data_dir),
            queue=queue, env=env, reservation=reservation, deadline=deadline, max_price=max_price, quote=quote,
            plan_token=plan_token))
        return app_id

    def plan(self, job: JobInput, *, queue: str | None = None, timeout: float = PLAN_TIMEOUT_S) -> JobPlan:
        """A dry run: what would happen if ``job`` were submitted now (its queue, where its AM and first stage
        would run, its predicted start and finish, whether its ``deadline_s`` holds, the running apps it would
        delay). Nothing is submitted."""
        spec, _ = read_job(job)
        with self._rest(max(timeout, self.timeout)) as web:
            answer = web.call("POST", plan_path(job_user(spec)), plan_body(spec, queue))
        return JobPlan.from_dict(answer.get("plan") or {})

    def explain(self, app_id: str) -> Explanation:
        """Why ``app_id`` waits: a reason code, the numbers behind it, its place in its queue, its waiting asks."""
        return Explanation.from_dict(self._rest().call("GET", explain_path(app_id)).get("explanation") or {})

    def wait(self, app_id: str, *, progress: ProgressCallback | None = None, timeout: float | None = None,
             interval: float = POLL_S, on_outage: OutageCallback | None = None) -> AppReport:
        """Wait for ``app_id`` to end and return its final report (look at ``final_status``). ``progress`` is
        called with the first report and with each one whose state, progress or stages changed; an RM that
        stops answering (a restart, a failover) is waited for, ``on_outage`` told. ``WaitTimeout`` after
        ``timeout`` seconds; the application keeps running either way."""
        watch = Watch(app_id, progress, timeout, clock=time.monotonic)
        ride = RideThrough(lambda: self.address, on_outage, clock=time.monotonic)
        while True:
            try:
                report = self.app(app_id)
            except ClientError as exc:
                time.sleep(watch.pause(ride.failed(exc)))
                continue
            ride.answered()
            if watch.seen(report):
                return report
            time.sleep(watch.pause(interval))

    def logs(self, app_id: str, container: str | None = None, file: str | Sequence[str] = "stdout",
             tail: int | None = None) -> list[LogFile]:
        """Container logs of ``app_id`` (of ``container`` only, if given) from their NodeManagers: ``file`` is
        a name (stdout, stderr, ...), several, or ``ALL``; ``tail`` keeps each file's last lines. A container
        whose node does not answer or has no such file (yet) is left out."""
        names = log_names(file)
        if self._nm is None:
            self._nm = httpx.Client(timeout=LOG_TIMEOUT_S)
        out: list[LogFile] = []
        for c in self.containers(app_id):
            if (container and c.container_id != container) or not c.node_http_address:
                continue
            for name in names:
                text = read_log(c.node_http_address, c.container_id, name, http=self._nm)
                if text is not None:
                    out.append(LogFile(c.container_id, c.node_id, name, last_lines(text, tail)))
        return out

    # ------------------------------------------------------------------------------------ reads and kill

    def app(self, app_id: str) -> AppReport:
        return AppReport.from_proto(self.rpc.app(app_id))

    def apps(self, states: Iterable[str] = (), queue: str = "", user: str = "") -> list[AppReport]:
        """Applications, finished ones too; ``states`` filters (YARN's state names)."""
        return [AppReport.from_proto(r) for r in self.rpc.apps(states=states, queue=queue, user=user)]

    def containers(self, app_id: str) -> list[ContainerReport]:
        return [ContainerReport.from_proto(c) for c in self.rpc.containers(app_id)]

    def nodes(self, states: Iterable[str] = ()) -> list[NodeReport]:
        return [NodeReport.from_proto(n) for n in self.rpc.nodes(states=states)]

    def kill(self, app_id: str, diagnostics: str = KILLED_BY_USER) -> None:
        """Kill ``app_id``; ``ClientError`` (FAILED_PRECONDITION) if it has already ended."""
        self.rpc.kill(app_id, diagnostics)

