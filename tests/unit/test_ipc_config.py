"""Where the RM's Hadoop IPC listeners go: explicit ports, then yarn-site.xml, then YARN's defaults."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from rm.service.ipc.config import settings


@dataclass
class Cfg:
    host: str = "127.0.0.1"
    loopback: bool = True
    ipc_client_port: int | None = None
    ipc_scheduler_port: int | None = None
    yarn_site: Path | None = None


def site(tmp_path: Path, **props: str) -> Path:
    path = tmp_path / "yarn-site.xml"
    path.write_text("<configuration>" + "".join(
        f"<property><name>{k}</name><value>{v}</value></property>" for k, v in props.items()) + "</configuration>")
    return path


def test_yarn_defaults() -> None:
    s = settings(Cfg(), env={})
    assert (s.client_port, s.scheduler_port, s.allow_simple_writes) == (8032, 8030, False)


def test_yarn_site_addresses_with_substitution(tmp_path: Path) -> None:
    path = site(tmp_path, **{"yarn.resourcemanager.hostname": "rm.example",
                             "yarn.resourcemanager.address": "${yarn.resourcemanager.hostname}:18032",
                             "yarn.resourcemanager.scheduler.address": "${yarn.resourcemanager.hostname}:18030"})
    s = settings(Cfg(yarn_site=path), env={})
    assert (s.client_port, s.scheduler_port, s.host) == (18032, 18030, "127.0.0.1")  # the RM's host is kept
    assert settings(Cfg(), env={"HADOOP_CONF_DIR": str(tmp_path)}).client_port == 18032


def test_explicit_ports_win(tmp_path: Path) -> None:
    path = site(tmp_path, **{"yarn.resourcemanager.address": "h:18032"})
    s = settings(Cfg(yarn_site=path, ipc_client_port=0, ipc_scheduler_port=-1), env={})
    assert (s.client_port, s.scheduler_port) == (0, -1)


def test_simple_writes_need_an_opt_in_on_loopback_too(tmp_path: Path) -> None:
    assert not settings(Cfg(), env={}).allow_simple_writes
    assert not settings(Cfg(host="0.0.0.0", loopback=False), env={}).allow_simple_writes
    path = site(tmp_path, **{"yarn.resourcemanager.ipc.allow-simple-writes": "true"})
    assert settings(Cfg(host="0.0.0.0", loopback=False, yarn_site=path), env={}).allow_simple_writes


def test_bad_address_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="host:port"):
        settings(Cfg(yarn_site=site(tmp_path, **{"yarn.resourcemanager.address": "nohostport"})), env={})


def test_unreadable_file_is_an_error(tmp_path: Path) -> None:
    bad = tmp_path / "yarn-site.xml"
    bad.write_text("<configuration><property>")
    with pytest.raises(ValueError, match="cannot read"):
        settings(Cfg(yarn_site=bad), env={})


def test_an_ha_pair_lists_every_rms_addresses_in_rm_ids_order(tmp_path: Path) -> None:
    path = site(tmp_path, **{"yarn.resourcemanager.ha.enabled": "true",
                             "yarn.resourcemanager.ha.rm-ids": "rm1, rm2",
                             "yarn.resourcemanager.address.rm1": "10.0.0.1:8032",
                             "yarn.resourcemanager.scheduler.address.rm1": "10.0.0.1:8030",
                             "yarn.resourcemanager.hostname.rm2": "10.0.0.2"})
    s = settings(Cfg(yarn_site=path), env={})
    assert s.ha_client_addresses == ("10.0.0.1:8032", "10.0.0.2:8032")  # rm2 from its hostname, YARN's port
    assert s.ha_scheduler_addresses == ("10.0.0.1:8030", "10.0.0.2:8030")


def test_ha_off_or_an_rm_without_an_address(tmp_path: Path) -> None:
    off = site(tmp_path, **{"yarn.resourcemanager.ha.rm-ids": "rm1,rm2",
                            "yarn.resourcemanager.address.rm1": "10.0.0.1:8032"})
    assert settings(Cfg(yarn_site=off), env={}).ha_client_addresses == ()
    broken = site(tmp_path, **{"yarn.resourcemanager.ha.enabled": "true", "yarn.resourcemanager.ha.rm-ids": "rm1,rm2",
                               "yarn.resourcemanager.address.rm1": "10.0.0.1:8032"})
    with pytest.raises(ValueError, match="rm2"):
        settings(Cfg(yarn_site=broken), env={})


def test_tokens_of_an_ha_pair_name_every_rm(tmp_path: Path) -> None:
    from types import SimpleNamespace

    from rm.service.ipc.facade import IpcFacade

    facade = IpcFacade.__new__(IpcFacade)
    facade.settings = settings(Cfg(), env={})
    facade.rm = SimpleNamespace(advertised_host="127.0.0.1")  # type: ignore[assignment]
    facade.client_port, facade.scheduler_port = 18032, 18030
    assert facade.token_service(facade.client_address) == "127.0.0.1:18032"  # alone: its own address
    path = site(tmp_path, **{"yarn.resourcemanager.ha.enabled": "true", "yarn.resourcemanager.ha.rm-ids": "a,b",
                             "yarn.resourcemanager.address.a": "127.0.0.1:18032",
                             "yarn.resourcemanager.scheduler.address.a": "127.0.0.1:18030",
                             "yarn.resourcemanager.address.b": "127.0.0.1:28032",
                             "yarn.resourcemanager.scheduler.address.b": "127.0.0.1:28030"})
    facade.settings = settings(Cfg(yarn_site=path), env={})
    assert facade.token_service(facade.client_address) == "127.0.0.1:18032,127.0.0.1:28032"
    assert facade.amrm_service == "127.0.0.1:18030,127.0.0.1:28030"
