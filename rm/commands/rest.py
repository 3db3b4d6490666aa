"""A small client for the RM's REST API, for the commands the gRPC API has no call for (move, priority,
lifetime, explain). The base URL comes from ``--rest``, ``$SHEPHERD_REST``, the RM web address in
``$HADOOP_CONF_DIR/yarn-site.xml``, or ``http://127.0.0.1:8088``."""

from __future__ import annotations

import os
from typing import Any, Self

import httpx

from common import credentials
from rm.client import ClientError

DEFAULT_REST = "http://127.0.0.1:8088"


def rest_base(explicit: str | None) -> str:
    if explicit:
        base = explicit
    elif os.environ.get("SHEPHERD_REST"):
        base = os.environ["SHEPHERD_REST"]
    else:
        base = _from_hadoop_conf() or DEFAULT_REST
    if "://" not in base:
        base = f"http://{base}"
    return base.rstrip("/")


def _from_hadoop_conf() -> str | None:
    from common.settings import SettingsError
    from rm.service.settings import load_rm_settings

    try:
        s = load_rm_settings(env=dict(os.environ))
    except SettingsError:
        return None
    if s.layers.source("yarn.resourcemanager.webapp.address") == "default":
        return None
    host = s.config.http_host
    return f"http://{'127.0.0.1' if host in ('0.0.0.0', '') else host}:{s.config.rest_port}"


class RestClient:
    def __init__(self, base: str | None = None, secret: str | None = None, timeout: float = 15.0) -> None:
        self.base = rest_base(base)
        secret = credentials.client_secret(self.base, secret)
        headers = {"Authorization": f"Bearer {secret}"} if secret else {}
        self._http = httpx.Client(base_url=self.base, timeout=timeout, headers=headers)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self._http.close()

    def call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        try:
            resp = self._http.request(method, path, json=body)
        except httpx.HTTPError as exc:
            raise ClientError("UNAVAILABLE", f"cannot reach the ResourceManager at {self.base}: {exc}") from None
        if resp.status_code in (200, 202):
            return resp.json() if resp.content else {}
        try:
            remote = resp.json()["RemoteException"]
            message = f"{remote['exception']}: {remote['message']}"
        except (ValueError, KeyError, TypeError):
            message = resp.text or resp.reason_phrase
        code = {400: "INVALID_ARGUMENT", 404: "NOT_FOUND", 409: "FAILED_PRECONDITION"}.get(resp.status_code,
                                                                                         "UNKNOWN")
        raise ClientError(code, message)
