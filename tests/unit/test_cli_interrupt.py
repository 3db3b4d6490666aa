"""Ctrl-C reaches a CLI command while it waits on a gRPC call: `app list --watch` against an RM that does not
answer stops at SIGINT (exit 0, as after any Ctrl-C of a watch) instead of waiting for the call to return, even
when it was started with SIGINT ignored; and a Ctrl-C that grpcio swallowed during a call is raised once the
call returns (``rm.client.interruptible``)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc
import pytest


class Stuck(grpc.GenericRpcHandler):
    """Every method: note the call, then answer nothing for a minute."""

    def __init__(self) -> None:
        self.called = threading.Event()
        self.release = threading.Event()

    def service(self, handler_call_details: Any) -> grpc.RpcMethodHandler:
        def hang(request: bytes, context: grpc.ServicerContext) -> bytes:
            self.called.set()
            self.release.wait(60)
            context.abort(grpc.StatusCode.UNAVAILABLE, "released")

        return grpc.unary_unary_rpc_method_handler(hang)


@pytest.fixture
def stuck_rm() -> Iterator[tuple[str, Stuck]]:
    handler = Stuck()
    server = grpc.server(futures.ThreadPoolExecutor(4), handlers=(handler,))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield f"127.0.0.1:{port}", handler
    finally:
        handler.release.set()
        server.stop(0)


@pytest.mark.parametrize("inherited", ["default", "ignored"])
def test_ctrl_c_stops_a_watch_whose_call_the_rm_does_not_answer(stuck_rm: tuple[str, Stuck], tmp_path: Path,
                                                                inherited: str) -> None:
    """``ignored``: started as a background job of a shell is, with SIGINT ignored; a SIGINT sent to the
    command still stops it."""
    address, handler = stuck_rm

    env = {**os.environ, "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / ".config")}
    env.pop("SHEPHERD_RM", None)
    root = Path(__file__).resolve().parents[2]
    env["PYTHONPATH"] = os.pathsep.join([str(root), env.get("PYTHONPATH", "")])
    command = [sys.executable, "-m", "rm.cli", "app", "list", "--watch", "--interval", "0.5", "-o", "yaml",
               "--rm", address]
    if inherited == "ignored":  # the shell ignores SIGINT and the command inherits that across exec
        command = ["sh", "-c", 'trap "" INT; exec "$@"', "sh", *command]
    watch = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert handler.called.wait(60), "the command never called the RM"
        watch.send_signal(signal.SIGINT)
        out, err = watch.communicate(timeout=15)  # the call would hang for 60 s: the Ctrl-C ended it
        assert watch.returncode == 0, (out, err)
        assert not handler.release.is_set()
    finally:
        if watch.poll() is None:
            watch.kill()
            watch.wait()


def test_an_interrupt_swallowed_during_a_call_is_raised_when_the_call_returns(
        stuck_rm: tuple[str, Stuck]) -> None:
    """The flag the CLI's SIGINT handler sets: a call that returns (here: fails) after it re-raises the Ctrl-C."""
    from rm import client as rm_client

    address, handler = stuck_rm
    handler.release.set()  # every call fails at once
    with rm_client.RMClient(address, secret="") as client:
        with pytest.raises(rm_client.ClientError):
            client.apps()
        rm_client._INTERRUPTED.set()
        try:
            with pytest.raises(KeyboardInterrupt):
                client.apps()
        finally:
            rm_client._INTERRUPTED.clear()
