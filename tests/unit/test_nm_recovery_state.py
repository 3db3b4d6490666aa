"""What a NodeManager keeps for recovery: the per-container records, their directory, and the switch."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from nodemanager.config import load_nm_settings
from nodemanager.containers import KILLED_BY_APPMASTER, Container
from nodemanager.daemon import _parser, config_from_args
from nodemanager.launch import container_dirs
from nodemanager.recovery import ContainerStore, SupervisorProcess
from nodemanager.statefiles import boot_id, same_boot, start_ticks, valid_container_id

CID = "container_1700000000000_0001_01_000002"
APP = "application_1700000000000_0001"


def test_a_record_round_trips(tmp_path: Path) -> None:
    c = Container(container_id=CID, app_id=APP, user="alice", resource={"memory-mb": 256, "vcores": 1},
                  dirs=container_dirs(tmp_path, APP, CID), state="RUNNING", pid=4242, token_expires=1.5e9,
                  task_ticks=777, kill_request=(KILLED_BY_APPMASTER, "stop"))
    back = Container.from_record(c.record())
    assert (back.container_id, back.app_id, back.user, back.resource) == (CID, APP, "alice", c.resource)
    assert back.dirs == c.dirs
    assert (back.state, back.pid, back.task_ticks, back.token_expires) == ("RUNNING", 4242, 777, 1.5e9)
    assert back.kill_request == (KILLED_BY_APPMASTER, "stop")
    assert back.recovered
    with pytest.raises(KeyError):
        Container.from_record({"container_id": CID})


def test_the_store_refuses_a_second_launch_and_odd_names(tmp_path: Path) -> None:
    store = ContainerStore(tmp_path)
    store.create(CID, {"container_id": CID})
    assert store.exists(CID)
    with pytest.raises(FileExistsError):
        store.create(CID, {})
    assert [f.container_id for f in store.scan()] == [CID]
    assert (store.root.stat().st_mode & 0o777) == 0o700
    for bad in ("", "../x", "a/b", ".hidden"):
        assert not valid_container_id(bad)
        assert not store.exists(bad)
        with pytest.raises(ValueError, match="invalid container id"):
            store.path(bad)
    store.remove(CID)
    assert not store.exists(CID)


def test_a_supervisor_that_is_gone_or_reused_is_not_adopted() -> None:
    assert SupervisorProcess.adopt(None) is None
    assert SupervisorProcess.adopt({"pid": 2**22 + 1, "start_ticks": 1}) is None
    assert SupervisorProcess.adopt({"pid": 1, "start_ticks": -1}) is None  # pid 1 is alive, but another process
    me = {"pid": os.getpid(), "start_ticks": start_ticks(os.getpid()), "boot_id": boot_id()}
    alive = SupervisorProcess.adopt(me)
    assert alive is not None
    assert alive.alive()
    alive.close()
    # the same pid and start time recorded during another boot name another process
    assert SupervisorProcess.adopt({**me, "boot_id": "another-boot"}) is None
    assert same_boot(me)
    assert not same_boot({"boot_id": "another-boot"})


def test_recovery_is_on_unless_turned_off(tmp_path: Path) -> None:
    def load(argv: list[str], conf_dir: Path | None = None) -> bool:
        args = _parser().parse_args(argv)
        return load_nm_settings(config_from_args(args), env={}, explicit=_parser().explicit(argv),
                                conf_dir=conf_dir).config.recovery_enabled

    assert load([]) is True
    assert load(["--no-recovery"]) is False
    (tmp_path / "yarn-site.xml").write_text(
        "<configuration><property><name>yarn.nodemanager.recovery.enabled</name><value>false</value>"
        "</property></configuration>")
    assert load([], tmp_path) is False
    assert load(["--recovery"], tmp_path) is True
