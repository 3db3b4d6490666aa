"""`shepherd config convert`: yarn-site.xml and capacity-scheduler.xml as one shepherd YAML file that reads back
the same (ports, queues), with what is not converted listed; an invalid queue tree is refused."""

from __future__ import annotations

from pathlib import Path

import yaml
from typer.testing import CliRunner

from rm.cli import app

SITE = {
    "yarn.resourcemanager.webapp.address": "0.0.0.0:18088",
    "yarn.resourcemanager.address": "rm.example:8032",
    "yarn.resourcemanager.am.max-attempts": "4",
    "yarn.nodemanager.resource.memory-mb": "8192",
    "yarn.log-aggregation-enable": "true",
    "yarn.nm.liveness-monitor.expiry-interval-ms": "${yarn.resourcemanager.am.max-attempts}0000",
}
QUEUES = {
    "yarn.scheduler.capacity.root.queues": "prod, dev",
    "yarn.scheduler.capacity.root.prod.capacity": "70",
    "yarn.scheduler.capacity.root.prod.maximum-capacity": "100",
    "yarn.scheduler.capacity.root.dev.capacity": "30",
    "yarn.scheduler.capacity.root.dev.maximum-capacity": "50",
    "yarn.scheduler.capacity.root.dev.user-limit-factor": "2",
    "yarn.scheduler.capacity.root.dev.acl_submit_applications": "alice",
}


def site(path: Path, props: dict[str, str]) -> None:
    body = "".join(f"<property><name>{k}</name><value>{v}</value></property>" for k, v in props.items())
    path.write_text(f'<?xml version="1.0"?>\n<configuration>{body}</configuration>\n')


def conf_dir(tmp_path: Path, queues: dict[str, str]) -> Path:
    d = tmp_path / "hadoop"
    d.mkdir()
    site(d / "yarn-site.xml", SITE)
    site(d / "capacity-scheduler.xml", queues)
    return d


def test_convert_writes_yaml_the_daemons_read_the_same(tmp_path: Path) -> None:
    d = conf_dir(tmp_path, QUEUES)
    out = tmp_path / "shepherd.yaml"
    runner = CliRunner()
    done = runner.invoke(app, ["config", "convert", "--hadoop-conf-dir", str(d), "--out", str(out)],
                         env={"HADOOP_CONF_DIR": "", "YARN_CONF_DIR": ""})
    assert done.exit_code == 0, done.output
    assert "3 not converted" in " ".join(done.output.split())
    data = yaml.safe_load(out.read_text())
    assert data["yarn.resourcemanager.webapp.address"] == "0.0.0.0:18088"
    assert data["yarn.nodemanager.resource.memory-mb"] == "8192"
    assert data["yarn.nm.liveness-monitor.expiry-interval-ms"] == "${yarn.resourcemanager.am.max-attempts}0000"
    assert set(data["queues"]) == {"prod", "dev"}
    assert data["queues"]["dev"]["maximum-capacity"] == 50
    assert data["queues"]["dev"]["user-limit-factor"] == 2
    assert not any(k.startswith("yarn.scheduler.capacity") for k in data)
    text = out.read_text()
    assert "#   yarn.resourcemanager.address = rm.example:8032  (Hadoop IPC" in text
    assert "#   yarn.log-aggregation-enable = true  (not used by shepherd)" in text
    assert "#   yarn.scheduler.capacity.root.dev.acl_submit_applications = alice  (not used by shepherd)" in text
    # the daemons read it as they read the XML
    from rm.service.settings import load_rm_settings

    from_xml = load_rm_settings(env={}, conf_dir=d).config
    from_yaml = load_rm_settings(env={}, config_file=out).config
    assert (from_yaml.rest_port, from_yaml.max_app_attempts, from_yaml.nm_expiry_s) == (18088, 4, 40.0)
    assert (from_yaml.rest_port, from_yaml.queues, from_yaml.nm_expiry_s) == \
        (from_xml.rest_port, from_xml.queues, from_xml.nm_expiry_s)
    valid = runner.invoke(app, ["config", "validate", "--config", str(out)], env={"HADOOP_CONF_DIR": ""})
    assert valid.exit_code == 0, valid.output
    # stdout without --out; an existing --out needs --force
    printed = runner.invoke(app, ["config", "convert", "--hadoop-conf-dir", str(d)])
    assert printed.exit_code == 0
    assert yaml.safe_load(printed.stdout) == data
    again = runner.invoke(app, ["config", "convert", "--hadoop-conf-dir", str(d), "--out", str(out)])
    assert again.exit_code == 2
    assert "--force" in again.output
    assert runner.invoke(app, ["config", "convert", "--hadoop-conf-dir", str(d), "--out", str(out),
                               "--force"]).exit_code == 0


def test_an_invalid_tree_or_directory_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    bad = dict(QUEUES, **{"yarn.scheduler.capacity.root.dev.capacity": "40"})  # 70 + 40 = 110 %
    d = conf_dir(tmp_path, bad)
    out = tmp_path / "shepherd.yaml"
    runner = CliRunner()
    done = runner.invoke(app, ["config", "convert", "--hadoop-conf-dir", str(d), "--out", str(out)])
    assert done.exit_code == 2
    said = " ".join(done.output.split())
    assert "capacity-scheduler.xml" in said
    assert "root" in said
    assert not out.exists()
    missing = runner.invoke(app, ["config", "convert", "--hadoop-conf-dir", str(tmp_path / "nope")])
    assert missing.exit_code == 2
    assert "does not exist" in missing.output
    none = runner.invoke(app, ["config", "convert"], env={"HADOOP_CONF_DIR": "", "YARN_CONF_DIR": ""})
    assert none.exit_code == 2
    assert "HADOOP_CONF_DIR" in none.output
