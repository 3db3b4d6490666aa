"""The asynchronous client: the synchronous one's methods, same names and arguments, awaitable (``grpc.aio``
for gRPC, ``httpx.AsyncClient`` for REST and the NodeManagers). It finds the cluster and the client secret
through ``rm.client.RMClient`` and ``rm.commands.rest``, as the synchronous one does, and shares its waiting and
log logic (``rm.sdk.follow``), its submissions (``rm.sdk.jobs``) and its results (``rm.sdk.models``)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Self

import grpc
import grpc.aio
import httpx

from common import credentials
from proto import shepherd_pb2 as pb
from proto import shepherd_pb2_grpc as pbg
from rm.client import ClientError, RMClient, bearer, next_address, refused
from rm.commands.rest import answer, unreachable
from rm.sdk.follow import OutageCallback, ProgressCallback, RideThrough, Watch, last_lines, log_names, log_url
from rm.sdk.jobs import DEFAULT_DATA_DIR, JobInput, job_user, plan_body, read_job, submission_context
from rm.sdk.models import FINAL_STATES, AppReport, ContainerReport, Explanation, JobPlan, LogFile, NodeReport
from rm.sdk.sync import (
    KILLED_BY_USER,
    LOG_TIMEOUT_S,
    PLAN_TIMEOUT_S,
    POLL_S,
    explain_path,
    plan_path,
    rest_url,
    rm_address,
)

_STUB: Any = pbg.ApplicationClientStub  # generated, untyped


class AsyncClient:
    """``Client``'s asynchronous twin; use it as an async context manager, or ``await close()``."""

    def __init__(self, rm: str | None = None, rest: str | None = None, *, cluster: str | None = None,
                 secret: str | None = None, timeout: float = 15.0) -> None:
        found = RMClient(rm_address(rm, rest, cluster), secret, timeout)  # the RM (or pair) and its client secret
        found.close()
        self.addresses = list(found.addresses)
        self.address = found.address
        self.timeout = timeout
        self._secret = found.secret
        self._given = (rm, rest, cluster)
        self._secret_given = secret
        self._channel: grpc.aio.Channel | None = None
        self._stub: Any = None
        self._rest_url: str | None = None
        self._web: httpx.AsyncClient | None = None
        self._nm: httpx.AsyncClient | None = None

    async def close(self) -> None:
        if self._channel is not None:
            await self._channel.close()
            self._channel = None
        for http in (self._web, self._nm):
            if http is not None:
                await http.aclose()
        self._web = self._nm = None

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # ------------------------------------------------------------------------------------ transports

    async def _connect(self, address: str) -> None:
        if self._channel is not None:
            await self._channel.close()
        self.address = address
        self._channel = grpc.aio.insecure_channel(address)
        self._stub = _STUB(self._channel)

    async def _call(self, method: str, request: Any) -> Any:
        """One gRPC call; an RM that does not answer is failed over to the next of a pair, as ``RMClient``."""
        if self._channel is None:
            await self._connect(self.address)
        metadata = bearer(self._secret)
        for tried in range(len(self.addresses)):
            try:
                return await getattr(self._stub, method)(request, metadata=metadata, timeout=self.timeout)
            except grpc.RpcError as exc:
                refusal = refused(exc, last=tried + 1 == len(self.addresses))
                if refusal is not None:
                    raise refusal from None
            await self._connect(next_address(self.addresses, self.address))
        raise AssertionError("unreachable")

    @property
    def rest_url(self) -> str:
        """The REST URL of the RM (found on first use)."""
        if self._rest_url is None:
            self._rest_url = rest_url(*self._given)
        return self._rest_url

    async def _rest(self, method: str, path: str, body: dict[str, Any] | None = None, *,
                    timeout: float | None = None) -> Any:
        """One REST call, authenticated and answered as ``RestClient.call``."""
        if self._web is None:
            secret = credentials.client_secret(self.rest_url, self._secret_given)
            headers = {"Authorization": f"Bearer {secret}"} if secret else {}
            self._web = httpx.AsyncClient(base_url=self.rest_url, timeout=self.timeout, headers=headers)
        try:
            resp = await self._web.request(method, path, json=body,
                                           timeout=self.timeout if timeout is None else timeout)
        except httpx.HTTPError as exc:
            raise unreachable(self.rest_url, exc) from None
        return answer(resp)

    # ------------------------------------------------------------------------------------ jobs

    async def submit(self, job: JobInput, *, queue: str | None = None, env: Mapping[str, str] | None = None,
                     data_dir: str | Path = DEFAULT_DATA_DIR, job_dir: str | Path | None = None,
                     reservation: str = "", deadline: float = 0.0, max_price: float = 0.0, quote: str = "",
                     plan_token: str = "") -> str:
        """As ``Client.submit``."""
        spec, directory = read_job(job)
        app_id = str((await self._call("GetNewApplication", pb.GetNewApplicationRequest())).application_id)
        ctx = submission_context(
            spec, app_id, job_dir=Path(job_dir or directory or Path.cwd()).resolve(), data_dir=Path(data_dir),
            queue=queue, env=env, reservation=reservation, deadline=deadline, max_price=max_price, quote=quote,
            plan_token=plan_token)
        await self._call("SubmitApplication", pb.SubmitApplicationRequest(context=ctx))
        return app_id

    async def plan(self, job: JobInput, *, queue: str | None = None, timeout: float = PLAN_TIMEOUT_S) -> JobPlan:
        """As ``Client.plan``."""
        spec, _ = read_job(job)
        answered = await self._rest("POST", plan_path(job_user(spec)), plan_body(spec, queue),
                                    timeout=max(timeout, self.timeout))
        return JobPlan.from_dict(answered.get("plan") or {})

    async def explain(self, app_id: str) -> Explanation:
        """As ``Client.explain``."""
        return Explanation.from_dict((await self._rest("GET", explain_path(app_id))).get("explanation") or {})

    async def wait(self, app_id: str, *, progress: ProgressCallback | None = None, timeout: float | None = None,
                   interval: float = POLL_S, on_outage: OutageCallback | None = None) -> AppReport:
        """As ``Client.wait``; the callbacks are plain functions, called on the event loop."""
        watch = Watch(app_id, progress, timeout, clock=time.monotonic)
        ride = RideThrough(lambda: self.address, on_outage, clock=time.monotonic)
        while True:
            try:
                report = await self.app(app_id)
            except ClientError as exc:
                await asyncio.sleep(watch.pause(ride.failed(exc)))
                continue
            ride.answered()
            if watch.seen(report):
                return report
            await asyncio.sleep(watch.pause(interval))

    async def logs(self, app_id: str, container: str | None = None, file: str | Sequence[str] = "stdout",
                   tail: int | None = None) -> list[LogFile]:
        """As ``Client.logs``; the files are read from their NodeManagers concurrently."""
        names = log_names(file)
        if self._nm is None:
            self._nm = httpx.AsyncClient(timeout=LOG_TIMEOUT_S)
        wanted = [(c, name) for c in await self.containers(app_id)
                  if (not container or c.container_id == container) and c.node_http_address for name in names]
        texts = await asyncio.gather(*(self._read_log(c.node_http_address, c.container_id, name)
                                       for c, name in wanted))
        return [LogFile(c.container_id, c.node_id, name, last_lines(text, tail))
                for (c, name), text in zip(wanted, texts, strict=True) if text is not None]

    async def _read_log(self, node_http_address: str, container_id: str, name: str) -> str | None:
        assert self._nm is not None
        try:
            resp = await self._nm.get(log_url(node_http_address, container_id, name))
        except httpx.HTTPError:
            return None
        return resp.text if resp.status_code == 200 else None

    # ------------------------------------------------------------------------------------ reads and kill

    async def app(self, app_id: str) -> AppReport:
        req = pb.GetApplicationReportRequest(application_id=app_id)
        return AppReport.from_proto((await self._call("GetApplicationReport", req)).report)

    async def apps(self, states: Iterable[str] = (), queue: str = "", user: str = "") -> list[AppReport]:
        req = pb.GetApplicationsRequest(states=list(states), queue=queue, user=user)
        return [AppReport.from_proto(r) for r in (await self._call("GetApplications", req)).applications]

    async def containers(self, app_id: str) -> list[ContainerReport]:
        req = pb.GetContainersRequest(application_id=app_id)
        return [ContainerReport.from_proto(c) for c in (await self._call("GetContainers", req)).containers]

    async def nodes(self, states: Iterable[str] = ()) -> list[NodeReport]:
        req = pb.GetClusterNodesRequest(states=list(states))
        return [NodeReport.from_proto(n) for n in (await self._call("GetClusterNodes", req)).nodes]

    async def kill(self, app_id: str, diagnostics: str = KILLED_BY_USER) -> None:
        """As ``Client.kill``: an app that has ended is refused, naming its state, as ``RMClient.kill`` does."""
        state = (await self.app(app_id)).state
        if state in FINAL_STATES:
            raise ClientError("FAILED_PRECONDITION", f"Application {app_id} has already finished: it is {state}")
        await self._call("KillApplication", pb.KillApplicationRequest(application_id=app_id, diagnostics=diagnostics))
