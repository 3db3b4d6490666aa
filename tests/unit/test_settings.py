"""Hadoop configuration files and the layered daemon settings: defaults < files < environment < flags."""

from __future__ import annotations

from pathlib import Path

import pytest

from common.hadoop_conf import Configuration, HadoopConfError, capacity_scheduler_queues, read_xml
from common.resources import Resources
from common.settings import SettingsError
from nodemanager.config import NodeManagerConfig, load_nm_settings
from rm.core.queues import build_queues
from rm.service.settings import RMFlags, load_rm_settings


def site(path: Path, props: dict[str, str], final: frozenset[str] = frozenset()) -> Path:
    body = "".join(
        f"<property><name>{k}</name><value>{v}</value>{'<final>true</final>' if k in final else ''}</property>"
        for k, v in props.items()
    )
    path.write_text(f'<?xml version="1.0"?>\n<configuration>{body}</configuration>\n')
    return path


TWO_QUEUES = {
    "yarn.scheduler.capacity.root.queues": "prod, dev",
    "yarn.scheduler.capacity.root.prod.capacity": "70",
    "yarn.scheduler.capacity.root.prod.maximum-capacity": "100",
    "yarn.scheduler.capacity.root.dev.capacity": "30",
    "yarn.scheduler.capacity.root.dev.maximum-capacity": "40",
    "yarn.scheduler.capacity.root.dev.user-limit-factor": "2",
    "yarn.scheduler.capacity.root.dev.maximum-am-resource-percent": "0.5",
    "yarn.scheduler.capacity.root.dev.state": "STOPPED",
}


def test_substitution_final_and_sources(tmp_path: Path) -> None:
    first = site(tmp_path / "core-site.xml", {"a": "x", "locked": "1"}, frozenset({"locked"}))
    second = site(tmp_path / "yarn-site.xml", {"b": "${a}-${env.HOME_DIR}", "locked": "2", "loop": "${loop}",
                                               "missing": "${nope}"})
    conf = Configuration(env={"HOME_DIR": "/h"})
    conf.add_file(first)
    conf.add_file(second)
    assert conf.get("b") == "x-/h"
    assert conf.source("b") == str(second)
    assert conf.get("locked") == "1"  # final in the first file
    assert [p.source for p in conf.ignored] == [str(second)]
    assert conf.get("missing") == "${nope}"  # unresolved references stay as written
    with pytest.raises(HadoopConfError, match="substitution depth"):
        conf.get("loop")
    conf.set("locked", "3", "flag --x", force=True)
    assert conf.get("locked") == "3"


def test_broken_files_are_refused_with_their_path(tmp_path: Path) -> None:
    bad = tmp_path / "yarn-site.xml"
    bad.write_text("<configuration><property><name>a</name>")
    with pytest.raises(HadoopConfError, match=str(bad)):
        read_xml(bad)
    bad.write_text("<foo/>")
    with pytest.raises(HadoopConfError, match="not <configuration>"):
        read_xml(bad)


def test_capacity_scheduler_queues_with_yarn_defaults(tmp_path: Path) -> None:
    conf = Configuration(env={})
    conf.add_file(site(tmp_path / "capacity-scheduler.xml", TWO_QUEUES))
    tree = capacity_scheduler_queues(conf)
    assert tree is not None
    assert tree["prod"]["maximum-am-resource-percent"] == pytest.approx(10)  # YARN's 0.1
    assert tree["dev"]["maximum-am-resource-percent"] == pytest.approx(50)
    queues = build_queues(tree)
    assert queues["root.prod"].abs_capacity == pytest.approx(0.7)
    assert queues["root.dev"].abs_max_capacity == pytest.approx(0.4)
    assert queues["root.dev"].user_limit_factor == 2
    assert not queues["root.dev"].running
    assert capacity_scheduler_queues(Configuration(env={})) is None
    conf.set("yarn.scheduler.capacity.root.dev.capacity", "[memory=1024,vcores=1]", "x")
    with pytest.raises(HadoopConfError, match="not a number"):
        capacity_scheduler_queues(conf)


def test_rm_settings_precedence_defaults_file_env_flags(tmp_path: Path) -> None:
    site(tmp_path / "yarn-site.xml", {
        "yarn.resourcemanager.hostname": "127.0.0.2",
        "yarn.resourcemanager.webapp.address": "${yarn.resourcemanager.hostname}:18088",
        "yarn.resourcemanager.am.max-attempts": "4",
        "yarn.nm.liveness-monitor.expiry-interval-ms": "30000",
        "yarn.scheduler.maximum-allocation-mb": "16384",
    })
    site(tmp_path / "capacity-scheduler.xml", TWO_QUEUES)
    s = load_rm_settings(env={"HADOOP_CONF_DIR": str(tmp_path)})
    cfg = s.config
    assert (cfg.http_host, cfg.rest_port) == ("127.0.0.2", 18088)
    assert (cfg.host, cfg.grpc_port) == ("127.0.0.2", 7030)
    assert cfg.max_app_attempts == 4
    assert cfg.nm_expiry_s == 30.0
    assert cfg.maximum_allocation == Resources.of(memory_mb=16384, vcores=4)
    assert cfg.queues is not None
    assert set(cfg.queues) == {"prod", "dev"}
    rows = {k: (v, src) for k, v, src in s.rows()}
    assert rows["yarn.resourcemanager.am.max-attempts"] == ("4", str(tmp_path / "yarn-site.xml"))
    assert rows["queues (children of root)"] == ("prod, dev", str(tmp_path / "capacity-scheduler.xml"))
    assert rows["yarn.cluster.max-application-priority"][1] == "default"

    yaml_file = tmp_path / "shepherd.yaml"
    yaml_file.write_text("yarn:\n  resourcemanager:\n    am:\n      max-attempts: 5\n"
                         "shepherd.resourcemanager.data-dir: /var/lib/shepherd\n")
    env = {"HADOOP_CONF_DIR": str(tmp_path), "SHEPHERD_DATA_DIR": "/srv/shepherd"}
    s = load_rm_settings(env=env, config_file=yaml_file)
    assert s.config.max_app_attempts == 5  # the YAML file beats yarn-site.xml
    assert s.config.data_dir == Path("/srv/shepherd")  # the environment beats the YAML file
    s = load_rm_settings(env=env, config_file=yaml_file,
                         flags=RMFlags(max_app_attempts=7, rest_port=0, data_dir=Path("d")))
    assert s.config.max_app_attempts == 7
    assert (s.config.http_host, s.config.rest_port) == ("127.0.0.2", 0)
    assert s.config.data_dir == Path("d")
    rows = {k: src for k, _, src in s.rows()}
    assert rows["yarn.resourcemanager.webapp.address"] == "flag --rest-port"
    assert rows["shepherd.resourcemanager.data-dir"] == "flag --data-dir"


def test_rm_defaults_are_loopback_and_secure() -> None:
    cfg = load_rm_settings(env={}).config
    assert (cfg.host, cfg.http_host, cfg.grpc_port, cfg.rest_port) == ("127.0.0.1", "127.0.0.1", 7030, 8088)
    assert cfg.queues is None
    assert cfg.maximum_allocation is None
    cfg.validate()
    assert not cfg.insecure
    exposed = load_rm_settings(env={"SHEPHERD_RM_HOSTNAME": "0.0.0.0", "SHEPHERD_INSECURE": "true"}).config
    assert exposed.insecure
    with pytest.raises(ValueError, match="secret"):
        exposed.validate()


def test_bad_values_name_the_property_and_its_source(tmp_path: Path) -> None:
    site(tmp_path / "yarn-site.xml", {"yarn.resourcemanager.am.max-attempts": "many"})
    with pytest.raises(SettingsError, match=r"am\.max-attempts = 'many' \(from .*yarn-site\.xml\)"):
        load_rm_settings(env={"HADOOP_CONF_DIR": str(tmp_path)})
    with pytest.raises(SettingsError, match="does not exist"):
        load_rm_settings(env={"HADOOP_CONF_DIR": str(tmp_path / "nope")})


def test_state_store_properties_map_to_a_sqlite_file(tmp_path: Path) -> None:
    site(tmp_path / "yarn-site.xml", {
        "yarn.resourcemanager.store.class":
            "org.apache.hadoop.yarn.server.resourcemanager.recovery.FileSystemRMStateStore",
        "yarn.resourcemanager.fs.state-store.uri": f"file://{tmp_path}/rmstore",
    })
    s = load_rm_settings(env={"HADOOP_CONF_DIR": str(tmp_path)})
    assert s.config.store_url == f"sqlite:///{tmp_path}/rmstore/rm-state.db"
    site(tmp_path / "yarn-site.xml", {"yarn.resourcemanager.store.class": "x.ZKRMStateStore"})
    s = load_rm_settings(env={"HADOOP_CONF_DIR": str(tmp_path)})
    assert s.config.store_url is None
    assert any("ZKRMStateStore" in w for w in s.warnings)


def test_nodemanager_reads_yarn_site_below_its_flags(tmp_path: Path) -> None:
    site(tmp_path / "yarn-site.xml", {
        "yarn.resourcemanager.hostname": "127.0.0.1",
        "shepherd.resourcemanager.grpc.address": "${yarn.resourcemanager.hostname}:17030",
        "yarn.nodemanager.resource.memory-mb": "3072",
        "yarn.nodemanager.resource.cpu-vcores": "3",
        "yarn.nodemanager.webapp.address": "127.0.0.1:18042",
        "yarn.nodemanager.local-dirs": f"{tmp_path}/nm1,{tmp_path}/nm2",
    })
    env = {"HADOOP_CONF_DIR": str(tmp_path)}
    s = load_nm_settings(NodeManagerConfig(), env=env)
    cfg = s.config
    assert cfg.rm_address == "127.0.0.1:17030"
    assert (cfg.memory_mb, cfg.vcores, cfg.http_port) == (3072, 3, 18042)
    assert cfg.work_dir == tmp_path / "nm1"
    flagged = load_nm_settings(NodeManagerConfig(memory_mb=1024), env=env, explicit={"memory_mb"})
    assert flagged.config.memory_mb == 1024
    sources = {k: src for k, _, src in flagged.rows}
    assert sources["yarn.nodemanager.resource.memory-mb"] == "flag --memory-mb"
    assert sources["yarn.nodemanager.resource.cpu-vcores"] == str(tmp_path / "yarn-site.xml")
    defaults = load_nm_settings(NodeManagerConfig(), env={}).config
    assert defaults == NodeManagerConfig()


def test_the_leftover_cap_reaches_the_carbyne_pipeline() -> None:
    from rm.core.policies.leftover import LeftoverStage
    from rm.core.policies.registry import named_pipeline

    def caps(env: dict[str, str]) -> list[float | None]:
        cfg = load_rm_settings(env=env).config
        cfg.validate()
        stages, _ = named_pipeline(cfg.scheduler, cfg.leftover_cap)
        return [s.cap for s in stages if isinstance(s, LeftoverStage)]

    assert caps({}) == [3.0]  # the default bound
    assert caps({"SHEPHERD_LEFTOVER_CAP": "1.5"}) == [1.5]
    assert caps({"SHEPHERD_LEFTOVER_CAP": "none"}) == [None]  # Carbyne's plain SRTF
    with pytest.raises(ValueError, match="at least 1"):
        load_rm_settings(env={"SHEPHERD_LEFTOVER_CAP": "0.5"}).config.validate()
    with pytest.raises(SettingsError, match="leftover-cap = 'lots'"):
        load_rm_settings(env={"SHEPHERD_LEFTOVER_CAP": "lots"})
