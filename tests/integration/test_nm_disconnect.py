"""A NodeManager cut off from its RM while it keeps running (a network partition as it sees it: heartbeats that
wait for an answer longer than the node expiry). By default its containers run on, however long a call waits;
with stop-on-disconnect they stop once the RM has not answered for the expiry, when the RM has given their
work to other nodes, and the stop is reported when the RM answers again."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from nodemanager.config import NodeManagerConfig, load_nm_settings
from proto import shepherd_pb2 as pb
from tests.integration.test_nodemanager import Harness, cid, dead, running_nm, wait_for_file

EXPIRY_MS = 1500
CUT_OFF_S = 8.0  # past the expiry, the supervisors' check (every 2 s) and the stop's grace (1 s)


async def _cut_off(h: Harness, tmp_path: Path) -> int:
    """Announce an expiry (through a resync), start a task, then let heartbeats hang; the task's pid."""
    h.rm.nm_expiry_ms = EXPIRY_MS
    h.rm.next_action = pb.NODE_ACTION_RESYNC
    await h.rm.wait_until(lambda: len(h.rm.registrations) == 2)
    pid_file = tmp_path / "pid"
    await h.start(cid(2), f"echo $$ > {pid_file}; exec sleep 60")
    pid = int(await wait_for_file(pid_file))
    await h.rm.wait_until(h.rm.state_is(cid(2), pb.CONTAINER_RUNNING))
    h.rm.hang_s = 60.0
    await asyncio.sleep(CUT_OFF_S)
    return pid


@pytest.mark.asyncio
async def test_by_default_a_cut_off_node_keeps_its_containers_running(tmp_path: Path) -> None:
    async with running_nm(tmp_path) as h:
        pid = await _cut_off(h, tmp_path)
        assert not dead(pid), "the task stopped although its NodeManager runs"
        h.rm.hang_s = 0.0
        await h.rm.wait_until(lambda: h.rm.latest(cid(2)) is not None and len(h.rm.heartbeats) > 3)
        assert not dead(pid)


@pytest.mark.asyncio
async def test_with_stop_on_disconnect_a_cut_off_node_stops_its_containers(tmp_path: Path) -> None:
    async with running_nm(tmp_path, stop_on_disconnect=True) as h:
        pid = await _cut_off(h, tmp_path)
        assert dead(pid), f"the task still runs {CUT_OFF_S:g} s after the RM stopped answering"
        h.rm.hang_s = 0.0
        status = await h.rm.completed(cid(2), timeout=30)  # reported once the RM answers again
        assert status.exit_status != 0


def test_stop_on_disconnect_is_a_setting(tmp_path: Path) -> None:
    site = tmp_path / "shepherd.yaml"
    site.write_text("shepherd.nodemanager.stop-on-disconnect: true\n")
    loaded = load_nm_settings(NodeManagerConfig(), env={}, config_file=site)
    assert loaded.config.stop_on_disconnect is True
    assert load_nm_settings(NodeManagerConfig(), env={}).config.stop_on_disconnect is False
    site.write_text("shepherd.nodemanager.stop-on-disconnect: sometimes\n")
    with pytest.raises(ValueError, match=r"shepherd\.nodemanager\.stop-on-disconnect must be true or false"):
        load_nm_settings(NodeManagerConfig(), env={}, config_file=site)
