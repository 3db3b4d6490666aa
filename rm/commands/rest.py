"""A small client for the RM's REST API, for the commands the gRPC API has no call for (move, priority,
lifetime, explain). A command's ``--rest`` option resolves its base URL (:mod:`rm.commands.target`); without
one, it comes from ``$SHEPHERD_REST``, the user config file's current cluster, the RM web address in
``$HADOOP_CONF_DIR/yarn-site.xml``, or ``http://127.0.0.1:8088``."""

from __future__ import annotations

from typing import Any, Self

import httpx

from common import credentials
from rm.client import ClientError
from rm.commands.target import rest_endpoint


def rest_base(explicit: str | None) -> str:
    """``explicit`` with its scheme and without a trailing slash, else the REST URL the command would use."""
    if explicit:
        return (explicit if "://" in explicit else f"http://{explicit}").rstrip("/")
    return rest_endpoint().address


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
            raise unreachable(self.base, exc) from None
        return answer(resp)


def unreachable(base: str, exc: httpx.HTTPError) -> ClientError:
    return ClientError("UNAVAILABLE", f"cannot reach the ResourceManager at {base}: {exc}")


def answer(resp: httpx.Response) -> Any:
    """The JSON of an answer (``{}`` when empty), or the RM's refusal (YARN's RemoteException) as a ClientError
    with the gRPC code of its HTTP status; the synchronous and the asynchronous clients read answers here."""
    if resp.status_code in (200, 202):
        return resp.json() if resp.content else {}
    try:
        remote = resp.json()["RemoteException"]
        message = f"{remote['exception']}: {remote['message']}"
    except (ValueError, KeyError, TypeError):
        message = resp.text or resp.reason_phrase
    code = {400: "INVALID_ARGUMENT", 404: "NOT_FOUND", 409: "FAILED_PRECONDITION"}.get(resp.status_code, "UNKNOWN")
    raise ClientError(code, message)
