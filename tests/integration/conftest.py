"""Fixtures the integration tests share: the PostgreSQL server the store tests use for real, and a NodeManager
that registers over gRPC and reports itself unhealthy (so an in-process RM places nothing), or healthy."""

from __future__ import annotations

import os
import secrets
import socket
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import Engine, create_engine, text
from sqlalchemy.exc import OperationalError

# The server's maintenance database; each test gets its own database beside it (empty_pg_database).
PG_ADMIN_URL = os.environ.get("SHEPHERD_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres")


def postgres_unavailable(reason: str) -> None:
    """Skip, or under CI (which starts PostgreSQL) fail: the store must be tested on it for real there."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"PostgreSQL at {PG_ADMIN_URL} is required under CI: {reason}")
    pytest.skip(f"PostgreSQL at {PG_ADMIN_URL} is not reachable: {reason}")


@pytest.fixture(scope="session")
def pg_admin() -> Iterator[Engine]:
    engine = create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT", connect_args={"connect_timeout": 5})
    try:
        with engine.connect() as conn:
            conn.execute(text("SELECT 1"))
    except OperationalError as e:
        engine.dispose()
        postgres_unavailable(str(e.orig))
    yield engine
    engine.dispose()


def empty_pg_database(admin: Engine) -> Iterator[str]:
    """A new, empty PostgreSQL database for one test (its URL), dropped afterwards."""
    name = f"shepherd_test_{secrets.token_hex(6)}"
    with admin.connect() as conn:
        conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
    try:
        yield admin.url.set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def closed_port() -> int:
    """A port nothing listens on (a NodeManager that will never answer)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def unhealthy_node(server: Any, capability: Any) -> str:
    """Register a NodeManager of ``capability`` with ``server`` (a running ResourceManager) over gRPC, with
    the node secret and its registration session, and report it unhealthy; its node id."""
    return await grpc_node(server, capability, healthy=False)


async def grpc_node(server: Any, capability: Any, *, healthy: bool) -> str:
    """``unhealthy_node``, reporting the node healthy or not: a healthy one is scheduled on (nothing ever
    runs there: its NodeManager is not listening)."""
    import grpc

    from proto import shepherd_pb2 as pb
    from proto import shepherd_pb2_grpc as pbg

    async with grpc.aio.insecure_channel(f"127.0.0.1:{server.grpc_port}") as channel:
        tracker = pbg.ResourceTrackerStub(channel)
        node_id = pb.NodeId(host="127.0.0.1", port=closed_port())
        node = [("authorization", f"Bearer {server.cfg.node_secret}")]
        call = tracker.RegisterNodeManager(pb.RegisterNodeRequest(
            node_id=node_id, http_address="127.0.0.1:1", capability=pb.Resource(values=capability.to_dict())),
            metadata=node)
        await call
        node += [(k, v) for k, v in await call.trailing_metadata() if k == "x-shepherd-node-session"]
        health = pb.NodeHealth(healthy=healthy, health_report="" if healthy else "test")
        await tracker.NodeHeartbeat(pb.NodeHeartbeatRequest(node_id=node_id, response_id=0, health=health),
                                    metadata=node)
    return f"127.0.0.1:{node_id.port}"


async def unmanaged_am(server: Any, channel: Any, name: str) -> tuple[str, Any, list[tuple[str, str]]]:
    """An unmanaged app submitted (as alice, with the client secret) to ``server`` (a running ResourceManager) and
    its AM registered over gRPC: its id, the AM stub, the AM's credentials."""
    from common import tokens
    from common.ids import AppId
    from proto import shepherd_pb2 as pb
    from proto import shepherd_pb2_grpc as pbg

    secret = [("authorization", f"Bearer {server.cfg.client_secret or ''}")]
    apps = pbg.ApplicationClientStub(channel)
    new = await apps.GetNewApplication(pb.GetNewApplicationRequest(), metadata=secret)
    await apps.SubmitApplication(pb.SubmitApplicationRequest(context=pb.ApplicationSubmissionContext(
        application_id=new.application_id, name=name, queue="default", user="alice", unmanaged_am=True,
        am_resource=pb.Resource(values={"memory-mb": 512, "vcores": 1}))), metadata=secret)
    attempt = server.state.apps[AppId(new.application_id)].current
    assert attempt is not None
    amrm = [("authorization", f"Bearer {tokens.amrm_token(server.state.amrm_key, attempt.attempt_id)}")]
    am = pbg.ApplicationMasterStub(channel)
    await am.RegisterApplicationMaster(pb.RegisterApplicationMasterRequest(), metadata=amrm)
    return new.application_id, am, amrm
